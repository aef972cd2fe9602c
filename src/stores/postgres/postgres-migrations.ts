import type { Pool } from 'pg'

/**
 * The PostgreSQL schema, by version. Each migration runs once, in order, in one
 * transaction together with its row in `schema_migrations`, under an advisory
 * lock: instances starting at once against a new database migrate it once, and
 * the others wait for it and find it done. Migrations only add (but for version 3's
 * move of older duplicate ledger rows), so an instance of an older library keeps
 * working on a newer schema.
 *
 * Tables (in the store's schema, `x402` by default):
 * - `entries`: one row per key and kind (`v` value, `h` numeric hash, `t` text hash,
 *   `d` distinct-count sketch, `r` ranking, `b` holds on a balance) with its expiry
 *   (epoch ms; NULL never); a value's string is in `value`.
 * - `fields`: fields of hashes (`num`, `text`), ranking scores (`num`), sketch
 *   registers (index in `field`, rank in `num`) and holds (`amount`, `closed_at`, `expires_at`).
 * - `ledger`: the settlement ledger, append-only (a trigger refuses UPDATE and DELETE), with one
 *   `settled` row per transaction (version 3: a unique partial index; appends skip a second one).
 * - `ledger_duplicates` (version 3): the later settled rows of a transaction that older versions wrote,
 *   moved out of the ledger.
 *
 * Multi-step writes are functions: atomic, and serialised per key by the lock on the
 * key's `entries` row, which every write takes first. Calls issued together travel as one
 * statement (`run_batch`, `apply_counters`): one round trip and one commit for all of them.
 */
const MIGRATIONS: readonly ((schema: string) => string)[] = [
  (s) => `
    CREATE TABLE ${s}.entries (
      key text COLLATE "C" NOT NULL,
      kind "char" NOT NULL,
      value text,
      expires_at bigint,
      PRIMARY KEY (key, kind)
    );
    CREATE INDEX entries_expiry ON ${s}.entries (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE ${s}.fields (
      key text COLLATE "C" NOT NULL,
      kind "char" NOT NULL,
      field text COLLATE "C" NOT NULL,
      num double precision,
      text text,
      amount numeric,
      closed_at bigint,
      expires_at bigint,
      PRIMARY KEY (key, kind, field)
    );

    -- Makes the key live for a write and locks its row: an expired key is emptied first; a
    -- ttl restarts its lifetime (Redis PEXPIRE), a new key without one never expires.
    CREATE FUNCTION ${s}.open_key(p_key text, p_kind "char", p_ttl bigint, p_now bigint) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      v_inserted boolean;
      v_expires bigint;
    BEGIN
      INSERT INTO ${s}.entries AS e (key, kind, expires_at) VALUES (p_key, p_kind, p_now + p_ttl)
      ON CONFLICT (key, kind) DO UPDATE SET expires_at = e.expires_at
      RETURNING (xmax = 0), expires_at INTO v_inserted, v_expires;
      IF v_inserted THEN RETURN; END IF;
      IF v_expires IS NOT NULL AND v_expires <= p_now THEN
        DELETE FROM ${s}.fields WHERE key = p_key AND kind = p_kind;
        UPDATE ${s}.entries SET expires_at = p_now + p_ttl, value = NULL WHERE key = p_key AND kind = p_kind;
      ELSIF p_ttl IS NOT NULL THEN
        UPDATE ${s}.entries SET expires_at = p_now + p_ttl WHERE key = p_key AND kind = p_kind;
      END IF;
    END $$;

    -- Evicts the lowest scores beyond the cap, ties by lowest member (Redis ZPOPMIN's order).
    CREATE FUNCTION ${s}.increment_ranked(p_key text, p_member text, p_by double precision, p_ttl bigint, p_cap integer, p_now bigint)
    RETURNS TABLE (score double precision, evicted text[])
    LANGUAGE plpgsql AS $$
    DECLARE
      v_score double precision;
      v_evicted text[] := '{}';
      v_extra integer;
    BEGIN
      PERFORM ${s}.open_key(p_key, 'r', p_ttl, p_now);
      INSERT INTO ${s}.fields AS f (key, kind, field, num) VALUES (p_key, 'r', p_member, p_by)
      ON CONFLICT (key, kind, field) DO UPDATE SET num = f.num + EXCLUDED.num
      RETURNING f.num INTO v_score;
      IF p_cap IS NOT NULL THEN
        SELECT count(*) - p_cap INTO v_extra FROM ${s}.fields WHERE key = p_key AND kind = 'r';
        IF v_extra > 0 THEN
          WITH doomed AS (
            SELECT field FROM ${s}.fields WHERE key = p_key AND kind = 'r' ORDER BY num ASC, field ASC LIMIT v_extra
          ), gone AS (
            DELETE FROM ${s}.fields f USING doomed d WHERE f.key = p_key AND f.kind = 'r' AND f.field = d.field RETURNING f.field
          )
          SELECT coalesce(array_agg(field), '{}') INTO v_evicted FROM gone;
        END IF;
      END IF;
      RETURN QUERY SELECT v_score, v_evicted;
    END $$;

    -- A new set of holds starts expired (expires_at = now): a refused first hold leaves nothing live behind.
    CREATE FUNCTION ${s}.place_hold(p_key text, p_id text, p_amount numeric, p_limit numeric, p_since bigint, p_ttl bigint, p_now bigint)
    RETURNS boolean
    LANGUAGE plpgsql AS $$
    DECLARE
      v_inserted boolean;
      v_expires bigint;
      v_held numeric;
    BEGIN
      INSERT INTO ${s}.entries AS e (key, kind, expires_at) VALUES (p_key, 'b', p_now)
      ON CONFLICT (key, kind) DO UPDATE SET expires_at = e.expires_at
      RETURNING (xmax = 0), expires_at INTO v_inserted, v_expires;
      IF NOT v_inserted AND v_expires IS NOT NULL AND v_expires <= p_now THEN
        DELETE FROM ${s}.fields WHERE key = p_key AND kind = 'b';
      END IF;
      DELETE FROM ${s}.fields WHERE key = p_key AND kind = 'b' AND expires_at <= p_now;
      SELECT coalesce(sum(amount), 0) INTO v_held FROM ${s}.fields
      WHERE key = p_key AND kind = 'b' AND field <> p_id AND (closed_at = 0 OR closed_at >= p_since);
      IF v_held + p_amount > p_limit THEN RETURN false; END IF;
      INSERT INTO ${s}.fields AS f (key, kind, field, amount, closed_at, expires_at) VALUES (p_key, 'b', p_id, p_amount, 0, p_now + p_ttl)
      ON CONFLICT (key, kind, field) DO UPDATE SET amount = EXCLUDED.amount, closed_at = 0, expires_at = EXCLUDED.expires_at;
      UPDATE ${s}.entries SET expires_at = greatest(expires_at, p_now + p_ttl) WHERE key = p_key AND kind = 'b';
      RETURN true;
    END $$;

    CREATE FUNCTION ${s}.close_hold(p_key text, p_id text, p_keep bigint, p_now bigint) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      v_expires bigint;
    BEGIN
      SELECT expires_at INTO v_expires FROM ${s}.entries WHERE key = p_key AND kind = 'b' FOR UPDATE;
      IF NOT FOUND OR v_expires <= p_now THEN RETURN; END IF;
      IF p_keep <= 0 THEN
        DELETE FROM ${s}.fields WHERE key = p_key AND kind = 'b' AND field = p_id;
        IF NOT EXISTS (SELECT 1 FROM ${s}.fields WHERE key = p_key AND kind = 'b') THEN
          DELETE FROM ${s}.entries WHERE key = p_key AND kind = 'b';
        END IF;
        RETURN;
      END IF;
      UPDATE ${s}.fields SET closed_at = p_now, expires_at = p_now + p_keep WHERE key = p_key AND kind = 'b' AND field = p_id;
      IF FOUND THEN
        UPDATE ${s}.entries SET expires_at = greatest(expires_at, p_now + p_keep) WHERE key = p_key AND kind = 'b';
      END IF;
    END $$;

    -- Counter writes of many keys in one statement (the store merges those issued together):
    -- keys come sorted, so two instances' batches lock them in one order and never deadlock.
    -- Rows: (index into the keys, field, num, text); hashes add, sketches keep the maximum, texts replace.
    CREATE FUNCTION ${s}.apply_counters(p_keys text[], p_kinds "char"[], p_ttls bigint[], p_rows integer[], p_fields text[], p_nums double precision[], p_texts text[], p_now bigint)
    RETURNS void
    LANGUAGE plpgsql AS $$
    BEGIN
      FOR i IN 1..coalesce(array_length(p_keys, 1), 0) LOOP
        PERFORM ${s}.open_key(p_keys[i], p_kinds[i], p_ttls[i], p_now);
      END LOOP;
      INSERT INTO ${s}.fields AS f (key, kind, field, num, text)
      SELECT p_keys[u.k], p_kinds[u.k], u.field, u.num, u.text FROM unnest(p_rows, p_fields, p_nums, p_texts) AS u(k, field, num, text)
      ON CONFLICT (key, kind, field) DO UPDATE SET
        num = CASE f.kind WHEN 'h' THEN f.num + EXCLUDED.num WHEN 'd' THEN greatest(f.num, EXCLUDED.num) ELSE f.num END,
        text = CASE f.kind WHEN 't' THEN EXCLUDED.text ELSE f.text END
      WHERE f.kind <> 'd' OR EXCLUDED.num > f.num;
    END $$;

    CREATE TABLE ${s}.ledger (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      recorded_at timestamptz NOT NULL,
      started_at timestamptz NOT NULL,
      status text NOT NULL,
      resumed boolean NOT NULL,
      error_reason text,
      error_message text,
      network text NOT NULL,
      scheme text NOT NULL,
      x402_version integer NOT NULL,
      payer text,
      pay_to text NOT NULL,
      asset text NOT NULL,
      amount numeric NOT NULL,
      transaction_id text,
      resource_url text
    );
    CREATE INDEX ledger_recorded_at ON ${s}.ledger (recorded_at);
    CREATE INDEX ledger_payer ON ${s}.ledger (payer, id);
    CREATE INDEX ledger_pay_to ON ${s}.ledger (pay_to, id);
    CREATE FUNCTION ${s}.ledger_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'the settlement ledger is append-only';
    END $$;
    CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ${s}.ledger
      FOR EACH ROW EXECUTE FUNCTION ${s}.ledger_append_only();

    ${runBatch(s, { ledgerCost: false, settledOnce: false })}
  `,
  // 2: the ledger records what each settle's transactions cost (numeric, the chain's smallest unit;
  // NULL in older rows), and the batch statement writes it.
  (s) => `
    ALTER TABLE ${s}.ledger ADD COLUMN cost numeric;
    ${runBatch(s, { ledgerCost: true, settledOnce: false })}
  `,
  // 3: one settled row per transaction (network and transaction id), so that a retry writing the row a
  // crash lost never writes a second. Schemas of older versions may hold a transaction's settled row
  // twice (two calls that both finished it): the first (lowest id) stays, the later ones move whole to
  // ledger_duplicates (kept for audit, never read by the library). The table is locked meanwhile, so
  // no instance appends between the move and the index. The batch statement skips a second settled
  // row instead of failing, for the instances of older versions too (they call the same function).
  (s) => `
    LOCK TABLE ${s}.ledger IN ACCESS EXCLUSIVE MODE;
    CREATE TABLE ${s}.ledger_duplicates (LIKE ${s}.ledger);
    INSERT INTO ${s}.ledger_duplicates SELECT * FROM ${s}.ledger l
      WHERE l.status = 'settled' AND l.transaction_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM ${s}.ledger k
        WHERE k.status = 'settled' AND k.network = l.network AND k.transaction_id = l.transaction_id AND k.id < l.id);
    ALTER TABLE ${s}.ledger DISABLE TRIGGER ledger_append_only;
    DELETE FROM ${s}.ledger WHERE id IN (SELECT id FROM ${s}.ledger_duplicates);
    ALTER TABLE ${s}.ledger ENABLE TRIGGER ledger_append_only;
    CREATE UNIQUE INDEX ledger_settled_transaction ON ${s}.ledger (network, transaction_id)
      WHERE status = 'settled' AND transaction_id IS NOT NULL;
    ${runBatch(s, { ledgerCost: true, settledOnce: true })}
  `,
]

/**
 * The statement that runs store calls issued together, as one statement and one transaction: a
 * JSON array of operations in, a JSON array of their results out. The client sends them sorted by
 * key, so two instances' batches lock rows in one order and never deadlock. Each migration that
 * changes it replaces it whole (`ledgerCost`: version 2's ledger column; `settledOnce`: version 3's
 * skip of a transaction's second settled row).
 */
function runBatch(s: string, options: { ledgerCost: boolean; settledOnce: boolean }): string {
  return `    CREATE OR REPLACE FUNCTION ${s}.run_batch(p_ops jsonb, p_now bigint) RETURNS jsonb
    LANGUAGE plpgsql AS $$
    DECLARE
      v_op jsonb;
      v_key text;
      v_result jsonb;
      v_rows integer;
      v_out jsonb[] := '{}';
    BEGIN
      FOR v_op IN SELECT value FROM jsonb_array_elements(p_ops) LOOP
        v_key := v_op->>'k';
        v_result := NULL;
        CASE v_op->>'o'
        WHEN 'get' THEN
          SELECT to_jsonb(e.value) INTO v_result FROM ${s}.entries e
          WHERE e.key = v_key AND e.kind = 'v' AND (e.expires_at IS NULL OR e.expires_at > p_now);
        WHEN 'set' THEN
          INSERT INTO ${s}.entries AS e (key, kind, value, expires_at) VALUES (v_key, 'v', v_op->>'v', (v_op->>'x')::bigint)
          ON CONFLICT (key, kind) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at;
          v_result := 'true';
        WHEN 'claim' THEN
          INSERT INTO ${s}.entries AS e (key, kind, value, expires_at) VALUES (v_key, 'v', v_op->>'v', (v_op->>'x')::bigint)
          ON CONFLICT (key, kind) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
          WHERE e.expires_at IS NOT NULL AND e.expires_at <= p_now;
          GET DIAGNOSTICS v_rows = ROW_COUNT;
          v_result := to_jsonb(v_rows = 1);
        WHEN 'delete' THEN
          DELETE FROM ${s}.entries WHERE key = v_key;
          DELETE FROM ${s}.fields WHERE key = v_key;
        WHEN 'fields' THEN
          SELECT coalesce(jsonb_object_agg(f.field, CASE WHEN f.kind = 't' THEN to_jsonb(f.text) ELSE to_jsonb(f.num) END), '{}') INTO v_result
          FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
          WHERE f.key = v_key AND f.kind = (v_op->>'kind')::"char" AND (e.expires_at IS NULL OR e.expires_at > p_now);
        WHEN 'hold' THEN
          v_result := to_jsonb(${s}.place_hold(v_key, v_op->>'id', (v_op->>'amount')::numeric, (v_op->>'limit')::numeric,
            (v_op->>'since')::bigint, (v_op->>'ttl')::bigint, p_now));
        WHEN 'close' THEN
          PERFORM ${s}.close_hold(v_key, v_op->>'id', (v_op->>'keep')::bigint, p_now);
        WHEN 'ledger' THEN
          INSERT INTO ${s}.ledger (recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme,
            x402_version, payer, pay_to, asset, amount, transaction_id, resource_url${options.ledgerCost ? ', cost' : ''})
          VALUES (to_timestamp((v_op->>'recordedAt')::double precision / 1000), to_timestamp((v_op->>'startedAt')::double precision / 1000),
            v_op->>'status', (v_op->>'resumed')::boolean, v_op->>'errorReason', v_op->>'errorMessage', v_op->>'network', v_op->>'scheme',
            (v_op->>'x402Version')::integer, v_op->>'payer', v_op->>'payTo', v_op->>'asset', (v_op->>'amount')::numeric,
            v_op->>'transaction', v_op->>'resourceUrl'${options.ledgerCost ? ", (v_op->>'cost')::numeric" : ''})${options.settledOnce ? ' ON CONFLICT DO NOTHING' : ''};
        ELSE
          RAISE EXCEPTION 'unknown store operation %', v_op->>'o';
        END CASE;
        v_out := array_append(v_out, coalesce(v_result, 'null'::jsonb));
      END LOOP;
      RETURN to_jsonb(v_out);
    END $$;
`
}

/** The schema version this library writes. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length

/** A double-quoted identifier; schema names are checked to be plain ones first. */
export function quoteSchema(schema: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new RangeError(`schema must be a plain SQL identifier (letters, digits, _), not ${JSON.stringify(schema)}`)
  return `"${schema}"`
}

/**
 * Brings the schema to the current version (`toVersion`: no further, for the tests of an upgrade).
 * Safe to run from many instances at once: the first takes the advisory lock and migrates; the
 * others wait, then find nothing left to do. Answers the version it found.
 */
export async function migratePostgres(pool: Pool, schema: string, toVersion = MIGRATIONS.length): Promise<number> {
  const s = quoteSchema(schema)
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    // Held to the end of the transaction; the key names this library and this schema.
    await client.query('SELECT pg_advisory_xact_lock($1::integer, hashtext($2)::integer)', [ADVISORY_LOCK_CLASS, schema])
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`)
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0)::integer AS version FROM ${s}.schema_migrations`)
    const found = rows[0]?.version ?? 0
    for (let next = found; next < Math.min(toVersion, MIGRATIONS.length); next++) {
      await client.query(MIGRATIONS[next]!(s))
      await client.query(`INSERT INTO ${s}.schema_migrations (version) VALUES ($1)`, [next + 1])
    }
    await client.query('COMMIT')
    return found
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}

/** First key of the advisory lock: "x402" in ASCII. */
const ADVISORY_LOCK_CLASS = 0x78343032
