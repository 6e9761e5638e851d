// Package statelog is the replication framework: one Replica per domain
// applies that domain's ordered log into the replicated database (a batch
// is one transaction of rows, ledger rows, arbitration anchors and the
// checkpoint; a batch of nothing but barriers rides the next one,
// passed.go; a small batch waits a moment for the records this node's own
// appends are bringing, gather.go; acknowledgements to the broker are
// spaced, acks.go; a write's answer is read in its record's apply,
// answers.go; each wait for the checkpoint is woken when it reaches the
// waiter's sequence, progress.go; a large batch's envelopes are decoded
// ahead of it, decodeahead.go; a domain may hold rows across one
// transaction's records and write them at its end, Held), runs the
// write path (decide against local rows, a refusal
// from them settled at the log's end, publish with the op id and the
// subject's anchor — a create on a replicated log held to a creation
// mark of this node's instead, zeromark.go —, wait for this node's own
// apply; each round's phases timed on the domain's metrics) and the read path
// (barrier reads for linearizable, waits for session). A gesture of
// several records is a Walk; the node gates (evict, readmit) walk every
// log beside the eviction gate they drive. It declares the Log it
// publishes to and the Spec a domain plugs in by (its Domain, stream and
// ceiling), and knows no domain and no broker.
package statelog
