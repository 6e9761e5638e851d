// Package trackapply is the tracker's apply side: the statelog.Domain
// that writes a record's rows (projects, work items and their tags,
// watchers, edges, comments, history and search postings) inside the
// applier's transaction, deterministically, so every node applying the
// same log holds the same rows. It owns the schema, the deletion gate
// (a purged item's later records apply nowhere), the computed columns and
// their recomputation (Rederive), what the creates of one transaction
// hold back to its end (held.go), and the apply of a bulk record as
// statements over its ids (bulk_set.go). It reads the record contract
// (trackrec), the framework's domain-facing API (statelog.Domain,
// Applying, Held, Gate) and SQLite; never the service (engine/tracker)
// nor any HTTP surface. Its script tests (testdata/*.txt) apply records
// to real SQLite files without a broker.
package trackapply
