// Package kbapply is the knowledge base's apply side: the statelog.Domain
// that writes a record's rows (spaces, pages, their versions, comments,
// the trash and the search index kept by triggers) inside the applier's
// transaction, deterministically, so every node applying the same log
// holds the same rows. It owns the schema, the deletion gate (a purged
// page's later records apply nowhere) and the tree rule both sides use
// (CanMove: a parent that is gone or would close a cycle is not taken).
// It reads the record contract (kbrec), the framework's domain-facing API
// and SQLite; never the service (engine/kb) nor any HTTP surface. Its
// script tests (testdata/*.txt) apply records to real SQLite files
// without a broker.
package kbapply
