// Package kb is the knowledge-base domain's service on the pages log
// (CREWLET_PAGES_LOG): spaces with settings, pages in a tree inside a
// space, moves, purges behind a deletion gate, and ranked search over
// titles and bodies. It is the decide side (validate, decide against the
// local rows, hand a record to the write path) and the reads, over the
// domain's view of its replica (statelog.DomainReplica), with its REST
// read and operator write routes. The record contract is kbrec, the apply
// side (rows and the search index from records) kbapply; Spec is how a
// node runs the three together. DESIGN.md says what the records are and
// why.
package kb
