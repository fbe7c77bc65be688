package main

import (
	"runtime/debug"
	"strconv"
)

// postgresGCPercent paces the Go garbage collector of a server whose data lives in Postgres.
//
// With the Postgres store the live heap is small (a few MB of connections, caches and requests in
// flight) and does not grow with the data served, but every request allocates: decoded JSON,
// validation, entries, pgx buffers. At the default GOGC of 100 the collector runs every few MB of
// allocation, dozens of times a second under load, and took about 15% of the process's CPU in
// bench/turns' profile (background marking plus allocation assists). GOGC 400 lets the heap grow
// to five times the live heap between cycles: tens of MB here, for a quarter of the cycles.
//
// The in-memory store is left at the default: its live heap is all the stored data, and five
// times that could be a great deal of memory.
//
// It is the GOGC a server on the Postgres store runs with unless GOGC is set.
const postgresGCPercent = 400

// gcForPostgres sets the collector to postgresGCPercent unless the environment sets GOGC (which the Go
// runtime has already applied), and describes the setting in force, for the start-up log.
func gcForPostgres(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return "GOGC=" + v + " (from the environment)"
	}
	debug.SetGCPercent(postgresGCPercent)
	return "GOGC=" + strconv.Itoa(postgresGCPercent) + " (the default on the Postgres store; set GOGC to override)"
}
