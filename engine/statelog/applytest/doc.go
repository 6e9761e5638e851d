// Package applytest runs script tests of a domain's apply side, for
// tests only: records appended to an in-memory log (statelogtest), applied
// by the real applier (statelog.Replica: decode, gates, ledger, held rows,
// the domain's Apply) on real SQLite files, no broker. A script
// (testdata/*.txt, github.com/cockroachdb/datadriven, regenerated with
// -rewrite) appends records, applies them and prints rows; after every
// command the node's rows are held to a model, the same records replayed
// from scratch into a fresh database one record a transaction, and every
// batch the node applied is handed to it again, which must change
// nothing.
//
// Commands:
//
//	append                 one record a line of its input: the domain's
//	                       verb and arguments (Domain.Record), and the
//	                       runner's own: op=NAME (the operation NAME: a
//	                       second use is a second copy of it), writer=N
//	                       (default n1), by=WHO (default operator; by= for
//	                       none), step=(NAME,VERB,OBJECT) (the id of that
//	                       step of operation NAME, as a walk derives it),
//	                       digest=D (the call's argument digest), v=N (the format version: above this
//	                       build's, the record cannot be decoded),
//	                       kind=K, subject=S (under the domain's
//	                       prefix) and scope=(...) override the domain's;
//	                       evict node=N and readmit node=N append the
//	                       framework's node gates
//	apply                  the node opens on its file and its reader hands
//	                       it every record appended since, at once: one
//	                       batch (split only at statelog.MaxTxRows)
//	rows [table=(...)]     the domain's tables (those named, or every one
//	                       holding rows), as Domain.Tables print them
//	gated                  the records a gate dropped and those retained
//	                       undecoded
package applytest
