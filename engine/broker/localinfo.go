package broker

import (
	"github.com/nats-io/nats-server/v2/server"
)

// A standalone embedded broker (one server, not clustered: a node of one)
// holds the stream in this process, so its state is read from the server
// itself rather than asked of its JetStream API: the API's answer costs a
// request through the system account, the API's deprioritised info
// queue, a JSON encoding and its decoding (about 90 µs of CPU in a broker
// of nine streams, against about 11 µs here: BenchmarkStreamInfo), and a
// create's creation-instant check and a linearizable read's log end each
// ask one. The in-process read is the same server's same fields (the
// stream's creation instant and state, as its info answer takes them),
// read when asked, so it is as fresh as the answer it replaces: one
// server, nothing accepted elsewhere.

// SetLocalServer makes the log read its stream's state from s, the
// standalone embedded broker holding it (SetLocalServer is not for a
// clustered server: a member's own copy may lag its leader's).
func (l *Log) SetLocalServer(s *server.Server) {
	if s != nil && !s.JetStreamIsClustered() {
		l.local = s
	}
}

// localState reads the stream's state from the local server; ok false
// where there is none, or it does not hold the stream (the API then
// answers, not-found included).
func (l *Log) localState() (st streamState, ok bool) {
	if l.local == nil {
		return st, false
	}
	acc := l.local.GlobalAccount()
	if acc == nil {
		return st, false
	}
	d, err := l.local.JszAccount(&server.JSzOptions{Account: acc.GetName(), Streams: true, Config: true})
	if err != nil {
		return st, false
	}
	for _, s := range d.Streams {
		if s.Name != l.name || s.Config == nil {
			continue
		}
		st.Created = s.Created
		st.Config.Replicas, st.Config.MaxBytes = s.Config.Replicas, s.Config.MaxBytes
		st.State.FirstSeq, st.State.LastSeq, st.State.Bytes = s.State.FirstSeq, s.State.LastSeq, s.State.Bytes
		return st, true
	}
	return st, false
}
