// Work in progress: the Redis store lands with its issue. Nothing is exported yet.
export {}
