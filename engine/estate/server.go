// Package estate is how a node without the data role reaches the estate:
// over NATS, every data node whose copy is sound answers a hello, the
// first to answer takes the node's calls, and a data node whose copy goes
// out of service (its applier stalled or stopped, the node evicted, its
// log not its rows' log) answers that it is out of service instead, so
// calls move to another. A data node that stops altogether stops
// answering, and calls move the same way; so does a call a data node
// refused in a way that proves it ran nowhere there (the refusal-code
// table's Elsewhere column). Client.Call is the one place these rules
// live.
//
// The calls themselves are opaque bytes: the server hands each to a
// Handler (the MCP surface's message handler, wired by cmd) and returns
// what it answers. Trust is the broker's: whatever may connect to the
// broker's client port may already append to the logs, so the estate
// service adds no reach that connection did not have.
package estate

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
)

// Subjects and headers of the estate service.
const (
	// SubjectHello is where a node without data asks who will take its
	// calls; every data node listens, and a sound one answers with the
	// subject its calls go to.
	SubjectHello = "crewlet.estate.hello"
	// subjectCallPrefix + a node's token is where that node takes calls.
	subjectCallPrefix = "crewlet.estate.call."

	// HeaderNode names the data node that answered a call.
	HeaderNode = "Crewlet-Node"
	// HeaderOutOfService marks an answer that is not the call's: the
	// node's copy is out of service, and the body is its refusal.
	HeaderOutOfService = "Crewlet-Out-Of-Service"
	// headerTimeout carries the caller's remaining budget in
	// milliseconds, so a data node stops working on a call nobody waits for.
	headerTimeout = "Crewlet-Timeout-Ms"
)

// Defaults of the server.
const (
	// DefaultMaxInFlight bounds the calls one data node runs at once for
	// nodes without data; more wait in the subscription's queue.
	DefaultMaxInFlight = 64
	// MaxCallTime bounds one call's work on a data node whatever the
	// caller says: a gesture's walk of several writes fits well inside it.
	MaxCallTime = 2 * time.Minute
	// standingCheck is how often the server looks at its copy's standing
	// to log a change of service.
	standingCheck = time.Second
)

// Handler runs one call and answers it; a nil answer is sent as empty.
type Handler func(ctx context.Context, body []byte) []byte

// Standing says why this node's copy cannot serve the estate, nil while
// it can.
type Standing func() *engine.Refusal

// ServerConfig is what a data node serves the estate from.
type ServerConfig struct {
	Conn     *nats.Conn
	Node     string
	Standing Standing
	Handle   Handler
	Logger   *slog.Logger
	// MaxInFlight bounds concurrent calls (default DefaultMaxInFlight).
	MaxInFlight int
}

// Server answers hellos and calls for one data node.
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	subject string
	subs    []*nats.Subscription
	slots   chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	calls   sync.WaitGroup
	watched chan struct{}
	once    sync.Once
}

// hello is a node without data asking; Exclude names data nodes it is
// moving away from for this call.
type hello struct {
	Exclude []string `json:"exclude,omitempty"`
}

// helloAnswer is one data node's answer: the subject its calls go to, or
// the refusal saying why its copy is out of service.
type helloAnswer struct {
	Node         string         `json:"node"`
	Subject      string         `json:"subject,omitempty"`
	OutOfService map[string]any `json:"out_of_service,omitempty"`
}

// Serve subscribes this data node to the estate service until Close.
func Serve(cfg ServerConfig) (*Server, error) {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger.With(engine.LogComponent, engine.ComponentEstate, "node", cfg.Node),
		subject: subjectCallPrefix + token(cfg.Node), slots: make(chan struct{}, cfg.MaxInFlight),
		ctx: ctx, cancel: cancel}
	for subj, h := range map[string]nats.MsgHandler{SubjectHello: s.hello, s.subject: s.call} {
		sub, err := cfg.Conn.Subscribe(subj, h)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.subs = append(s.subs, sub)
	}
	// The subscriptions must reach the broker before the node says it
	// serves, or a hello sent at once finds nobody.
	if err := cfg.Conn.Flush(); err != nil {
		s.Close()
		return nil, err
	}
	s.watched = make(chan struct{})
	go s.watch()
	s.log.Info("estate_serving", "subject", s.subject)
	return s, nil
}

// token turns a node name into one subject token.
func token(node string) string {
	b := []byte(node)
	for i, c := range b {
		switch c {
		case '.', '*', '>', ' ', '\t':
			b[i] = '_'
		}
	}
	return string(b)
}

func (s *Server) hello(m *nats.Msg) {
	var h hello
	// An unreadable hello asks like one that excludes nobody.
	_ = json.Unmarshal(m.Data, &h)
	if slices.Contains(h.Exclude, s.cfg.Node) {
		return
	}
	a := helloAnswer{Node: s.cfg.Node, Subject: s.subject}
	if r := s.cfg.Standing(); r != nil {
		a.Subject, a.OutOfService = "", r.Object()
	}
	b, _ := json.Marshal(a)
	_ = m.Respond(b)
}

func (s *Server) call(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	if r := s.cfg.Standing(); r != nil {
		s.refuse(m, r)
		return
	}
	budget := MaxCallTime
	if ms, err := strconv.Atoi(m.Header.Get(headerTimeout)); err == nil && ms > 0 {
		budget = min(budget, time.Duration(ms)*time.Millisecond)
	}
	// Waiting for a slot holds this subscription's queue: a node without
	// data whose call waits too long moves on by its own deadline.
	select {
	case s.slots <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		defer func() { <-s.slots }()
		ctx, cancel := context.WithTimeout(s.ctx, budget)
		defer cancel()
		out := nats.NewMsg(m.Reply)
		out.Header.Set(HeaderNode, s.cfg.Node)
		out.Data = s.cfg.Handle(ctx, m.Data)
		if err := m.RespondMsg(out); err != nil {
			s.log.Warn("estate_answer_failed", engine.LogErr, err.Error())
		}
	}()
}

// refuse answers a call with the refusal saying why this copy is out of
// service: the call did not run, so the caller may take it elsewhere.
func (s *Server) refuse(m *nats.Msg, r *engine.Refusal) {
	out := nats.NewMsg(m.Reply)
	out.Header.Set(HeaderNode, s.cfg.Node)
	out.Header.Set(HeaderOutOfService, string(r.Code))
	out.Data, _ = json.Marshal(r.Object())
	_ = m.RespondMsg(out)
}

// watch logs each change of this node's service: estate_withdrawn when
// its copy goes out of service (hellos are then answered with why, calls
// refused so they move), estate_restored when it is back.
func (s *Server) watch() {
	defer close(s.watched)
	t := time.NewTicker(standingCheck)
	defer t.Stop()
	out := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		r := s.cfg.Standing()
		switch {
		case r != nil && !out:
			out = true
			s.log.Warn("estate_withdrawn", "refused", string(r.Code), "reason", r.Message)
		case r == nil && out:
			out = false
			s.log.Info("estate_restored")
		}
	}
}

// Subject is where this node takes calls.
func (s *Server) Subject() string { return s.subject }

// Close stops answering, then waits for the calls in flight to answer.
func (s *Server) Close() {
	s.once.Do(func() {
		for _, sub := range s.subs {
			_ = sub.Unsubscribe()
		}
		// Make the broker drop the interest now, so a call sent after
		// Close is answered no-responders rather than lost in between.
		_ = s.cfg.Conn.Flush()
		done := make(chan struct{})
		go func() { s.calls.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		s.cancel()
		<-done
		if s.watched != nil {
			<-s.watched // watch exits on the cancelled context
		}
	})
}
