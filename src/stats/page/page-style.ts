/**
 * The statistics page's stylesheet, inlined in the page and allowed by its
 * hash in the Content-Security-Policy (no other style, no script). Light and
 * dark follow `prefers-color-scheme`; below 40rem wide, tables of many columns
 * turn into one card per row.
 */
export const STATS_PAGE_CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#59636e;--line:#d8dee4;--card:#f4f6f8;--link:#0a5dc2;
--c0:#0072b2;--c1:#d55e00;--c2:#009e73;--c3:#cc79a7;--c4:#56b4e9;--c5:#e69f00;--c6:#8a6d00;--c7:#7f7f7f;
--q99:#bcd5f3;--q95:#6ea3e2;--q50:#0b4f9e;--good:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--fg:#e6e9ed;--muted:#9ba6b2;--line:#2d343c;--card:#181d23;--link:#7ab7ff;
--c0:#56a8e8;--c1:#ff8c42;--c2:#2fc79a;--c3:#e39ac8;--c4:#8fd3ff;--c5:#f2b53a;--c6:#d8c25a;--c7:#a8a8a8;
--q99:#1f3a5c;--q95:#3b6fab;--q50:#9ccaff;--good:#4ac26b;--warn:#d29922}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header,main,footer{max-width:72rem;margin:0 auto;padding:0 1rem}
header{padding-top:1.5rem}
h1{font-size:1.6rem;margin:0 0 .25rem}
h2{font-size:1.25rem;margin:2.25rem 0 .75rem;padding-top:1rem;border-top:1px solid var(--line)}
h3{font-size:1rem;margin:0 0 .5rem}
p{margin:.25rem 0 .75rem}
a{color:var(--link)}
.muted,.note{color:var(--muted)}
.note{font-size:.875rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(13rem,1fr));gap:.75rem;margin:0 0 1rem;padding:0;list-style:none}
.cards li{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.75rem 1rem}
.cards .label{display:block;color:var(--muted);font-size:.875rem}
.cards .value{display:block;font-size:1.6rem;font-weight:650;font-variant-numeric:tabular-nums}
.cards .sub{display:block;color:var(--muted);font-size:.875rem}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,30rem),1fr));gap:1.25rem}
figure{margin:0;min-width:0}
figcaption{font-weight:600;margin-bottom:.25rem}
.chart{display:block;width:100%;height:auto;overflow:visible}
.chart text{font-size:15px;fill:var(--muted)}
.chart .heading{fill:var(--fg);font-weight:600}
.chart .empty{fill:var(--muted);font-size:17px}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart .baseline{stroke:var(--muted);stroke-width:1}
.c0{fill:var(--c0);background:var(--c0)}.c1{fill:var(--c1);background:var(--c1)}.c2{fill:var(--c2);background:var(--c2)}.c3{fill:var(--c3);background:var(--c3)}
.c4{fill:var(--c4);background:var(--c4)}.c5{fill:var(--c5);background:var(--c5)}.c6{fill:var(--c6);background:var(--c6)}.c7{fill:var(--c7);background:var(--c7)}
.q99{fill:var(--q99);background:var(--q99)}.q95{fill:var(--q95);background:var(--q95)}.q50{fill:var(--q50);background:var(--q50)}
.legend{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:.25rem 0;padding:0;list-style:none;font-size:.875rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:.15rem;margin-right:.35rem;vertical-align:-.05rem}
details{margin:.5rem 0 0}
summary{cursor:pointer;color:var(--link);font-size:.875rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:.9rem;font-variant-numeric:tabular-nums}
caption{text-align:left;color:var(--muted);font-size:.875rem;padding:.25rem 0}
th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
thead th{color:var(--muted);font-weight:600;font-size:.8rem;border-bottom-color:var(--muted)}
td.num,th.num{text-align:right}
.resource-name{font-weight:600}
.lines{display:inline-block}
.lines bdi,.nowrap{white-space:nowrap}
.resource-url{overflow-wrap:anywhere;font-size:.85rem}
.description{color:var(--muted);overflow-wrap:anywhere;margin:.15rem 0 0}
.rate-good{color:var(--good);font-weight:600}
.rate-low{color:var(--warn);font-weight:600}
footer{margin-top:2.5rem;padding-bottom:2rem;border-top:1px solid var(--line);padding-top:1rem;font-size:.875rem;color:var(--muted)}
@media (max-width:40rem){
h1{font-size:1.35rem}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
table.stack,table.stack caption,table.stack tbody,table.stack tr,table.stack td,table.stack th{display:block;width:100%}
table.stack tr{border:1px solid var(--line);border-radius:.5rem;margin:0 0 .75rem;padding:.25rem .75rem;background:var(--card)}
table.stack td,table.stack th{border:0;padding:.2rem 0;text-align:left}
table.stack td[data-label]::before{content:attr(data-label);display:inline-block;min-width:8.5rem;color:var(--muted);font-size:.8rem;font-weight:400;vertical-align:top}
.chart text{font-size:19px}
}
`
