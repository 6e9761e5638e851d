// Package statelogtest is an in-memory statelog.Log for tests only: one
// domain's stream shared by every node of a test, with a durable reader per
// node, modelling what engine/broker gets from JetStream (monotonic
// sequences, the Nats-Msg-Id duplicate window, the expected last subject
// sequence, an ack-all consumer that redelivers what it was not told was
// applied once its ack wait passes, a reader rebuilt at the checkpoint when
// it disagrees with the rows) and the faults a test drives by hand: held,
// dropped and repeated deliveries, lost and failed appends and reads, and a
// clock for the duplicate window and the ack wait.
//
// It is not a broker: nothing here is safe to run a node on. The statelog
// datadriven tests (engine/statelog/testdata) are its main user.
package statelogtest
