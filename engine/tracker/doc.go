// Package tracker is the work-tracker domain: projects, work items keyed
// PREFIX-n, and the records that change them. It plugs into the replication
// framework as a statelog.Domain (the apply side: rows from records) and
// offers the tracker's service (the decide side: validate, read the local
// rows, build a record and hand it to the write path), with its REST read
// and operator write routes. Spec is how a node runs it.
package tracker
