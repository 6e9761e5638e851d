// Package fleettest is the fault harness for a fleet of data nodes: three
// (or more) nodes whose embedded brokers form a NATS cluster on loopback,
// every route through a TCP proxy the test can cut, delay or heal, nodes
// stopped and restarted on their data directories, and a table hash to
// show that healed nodes converged to identical rows. Each broker
// advertises a dead route address, so route gossip cannot re-create a
// direct route around a cut proxy. Check judges a run's history (reads,
// if_match updates and their refusals) against the quiesced log and a
// linearizability model. A failed test prints each node's newest log
// lines, its broker's among them (flight.go). Tests only; its own
// tests are end-to-end and run with -tags integration.
package fleettest
