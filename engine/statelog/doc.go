// Package statelog is the replication framework: one Replica per domain
// applies that domain's ordered log into the replicated database (a batch
// is one transaction of rows, ledger rows, arbitration anchors and the
// checkpoint), runs the write path (decide against local rows, publish with
// the op id and the subject's anchor, wait for this node's own apply) and
// the read path (barrier reads for linearizable, waits for session). It
// declares the Log it publishes to and the Domain it applies into, and
// knows no domain and no broker.
package statelog
