// Package tracker is the work-tracker domain's service: projects, work
// items keyed PREFIX-n, and the gestures that change them. It is the
// decide side (validate, read the local rows, build a record and hand it
// to the write path) and the reads, over the domain's view of its replica
// (statelog.DomainReplica), with its REST read and operator write routes.
// The record contract is trackrec, the apply side (the rows a record
// writes) trackapply; Spec is how a node runs the three together.
package tracker
