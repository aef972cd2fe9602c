// Work in progress: the adapter lands with its issue. Nothing is exported yet.
export {}
