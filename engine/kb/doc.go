// Package kb is the knowledge-base domain on the pages log
// (CREWLET_PAGES_LOG): spaces with settings, pages in a tree inside a
// space, moves, purges behind a deletion gate, and ranked search over
// titles and bodies. It plugs into the replication framework as a
// statelog.GatedDomain (Domain: the apply side, rows and the search index
// from records) and offers the knowledge base's Service (the decide side:
// validate, decide against the local rows, hand a record to the write
// path), with its REST read and operator write routes; Spec is how a node
// runs it. DESIGN.md says what the records are and why.
package kb
