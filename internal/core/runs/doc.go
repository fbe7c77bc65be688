// Package runs records agent runs: a bounded, honest tail of each run's
// events (EventTail: the cap counts distinct events, identical context
// announcements are repeats that hold no slot, the oldest go first and the
// counters always say so), the preparation of events before they are stored
// (embedding digests, truncation of large payloads), and the service that
// opens, appends to, reads and finishes recordings through a Store that
// serialises appends per run.
package runs
