package estate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
)

// Defaults of the client.
const (
	// DefaultHelloWait is how long a hello waits for a sound data node.
	DefaultHelloWait = 2 * time.Second
	// afterOutOfService is how much longer a hello waits for a sound node
	// once one has answered that its copy is out of service: the others
	// answer about as fast.
	afterOutOfService = 300 * time.Millisecond
	// maxMoves bounds how many data nodes one call is offered to.
	maxMoves = 8
)

// Client is a node without data: it sends calls to the data node that
// first answered its hello, and keeps that one until it is out of service
// or gone.
type Client struct {
	nc        *nats.Conn
	log       *slog.Logger
	helloWait time.Duration
	owned     bool

	mu      sync.Mutex
	current *target
}

type target struct{ node, subject string }

// Reply is a call's answer and the data node that gave it.
type Reply struct {
	Node string
	Body []byte
}

// NoDataNode refuses a call no data node took: none answered, or every
// one that did is out of service (OutOfService holds each one's refusal).
// The call ran nowhere.
type NoDataNode struct {
	OutOfService map[string]map[string]any
	// Unreachable says the broker itself did not answer.
	Unreachable error
}

func (e *NoDataNode) Error() string {
	if e.Unreachable != nil {
		return "the broker did not answer: " + e.Unreachable.Error()
	}
	if len(e.OutOfService) == 0 {
		return "no data node answered"
	}
	var parts []string
	for _, n := range e.nodes() {
		r := e.OutOfService[n]
		parts = append(parts, fmt.Sprintf("%s is out of service (%v: %v)", n, r["refused"], r["message"]))
	}
	return "no sound data node answered: " + strings.Join(parts, "; ")
}

func (e *NoDataNode) nodes() []string {
	var ns []string
	for n := range e.OutOfService {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// NoAnswer says a call reached Node and no answer came before the
// deadline: it may have run there.
type NoAnswer struct {
	Node string
	Err  error
}

func (e *NoAnswer) Error() string {
	return fmt.Sprintf("data node %s did not answer: %v", e.Node, e.Err)
}

func (e *NoAnswer) Unwrap() error { return e.Err }

// DialOptions are how a node without data connects to the broker.
type DialOptions struct {
	// URLs are the brokers' client URLs, comma-separated or one each.
	URLs []string
	// Token is the brokers' client token (stream.client.token); empty
	// sends none (credentials may ride in the URL).
	Token string
	// Name names the connection on the broker.
	Name   string
	Logger *slog.Logger
}

// Dial connects a node without data to the fleet's brokers. It keeps
// reconnecting for as long as it runs, to any broker of the cluster.
func Dial(o DialOptions) (*Client, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("estate: no broker URL to join")
	}
	opts := []nats.Option{nats.Name(o.Name), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), broker.AsyncErrors(o.Logger)}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	nc, err := nats.Connect(strings.Join(o.URLs, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("estate: connect to %s: %w", strings.Join(o.URLs, ","), err)
	}
	c := NewClient(nc, o.Logger)
	c.owned = true
	return c, nil
}

// NewClient is a client on an open connection.
func NewClient(nc *nats.Conn, logger *slog.Logger) *Client {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{nc: nc, log: logger.With(engine.LogComponent, engine.ComponentEstate), helloWait: DefaultHelloWait}
}

// SetHelloWait changes how long a hello waits for a sound data node.
func (c *Client) SetHelloWait(d time.Duration) { c.helloWait = d }

// Close closes the connection Dial opened.
func (c *Client) Close() {
	if c.owned {
		c.nc.Close()
	}
}

// Call sends body to a sound data node, not one of exclude, and returns
// its answer. A data node that answers it is out of service, or has gone
// (no subscriber for its subject), did not run the call, so the call moves
// to the next; one that takes the call and does not answer before ctx ends
// may have run it, and Call answers *NoAnswer naming it rather than sending
// it again. With no data node left, Call answers *NoDataNode.
func (c *Client) Call(ctx context.Context, body []byte, exclude ...string) (Reply, error) {
	exclude = slices.Clone(exclude)
	oos := map[string]map[string]any{}
	for range maxMoves {
		t, err := c.target(ctx, exclude, oos)
		if err != nil {
			return Reply{}, err
		}
		msg := nats.NewMsg(t.subject)
		msg.Data = body
		if dl, ok := ctx.Deadline(); ok {
			msg.Header.Set(headerTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
		}
		resp, err := c.nc.RequestMsgWithContext(ctx, msg)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			// Nobody holds its subject: the node is gone, and the call
			// was delivered to nobody.
			c.moved(t, "gone", nil)
			exclude = append(exclude, t.node)
			continue
		case err != nil && ctx.Err() != nil:
			// The next call asks again: a paused or cut-off node answers
			// no hello, so it is passed over.
			c.drop(t)
			c.log.Warn("estate_call_unanswered", "data_node", t.node, engine.LogErr, err.Error())
			return Reply{}, &NoAnswer{Node: t.node, Err: err}
		case err != nil:
			return Reply{}, &NoDataNode{Unreachable: err}
		}
		if code := resp.Header.Get(HeaderOutOfService); code != "" {
			var r map[string]any
			_ = json.Unmarshal(resp.Data, &r)
			oos[t.node] = r
			c.moved(t, code, r)
			exclude = append(exclude, t.node)
			continue
		}
		return Reply{Node: t.node, Body: resp.Data}, nil
	}
	return Reply{}, &NoDataNode{OutOfService: oos}
}

// drop forgets t as the current data node.
func (c *Client) drop(t target) {
	c.mu.Lock()
	if c.current != nil && *c.current == t {
		c.current = nil
	}
	c.mu.Unlock()
}

// moved drops t as the current data node and says why.
func (c *Client) moved(t target, why string, refusal map[string]any) {
	c.drop(t)
	attrs := []any{"from", t.node, "reason", why}
	if refusal != nil {
		attrs = append(attrs, "message", refusal["message"])
	}
	c.log.Warn("estate_call_moved", attrs...)
}

// target is the current data node unless excluded, else the first sound
// one to answer a hello.
func (c *Client) target(ctx context.Context, exclude []string, oos map[string]map[string]any) (target, error) {
	c.mu.Lock()
	cur := c.current
	c.mu.Unlock()
	if cur != nil && !slices.Contains(exclude, cur.node) {
		return *cur, nil
	}
	t, err := c.hello(ctx, exclude, oos)
	if err != nil {
		return target{}, err
	}
	c.mu.Lock()
	c.current = &t
	c.mu.Unlock()
	c.log.Info("estate_joined", "data_node", t.node)
	return t, nil
}

// hello asks every data node and takes the first sound one to answer;
// the out-of-service answers it meets go into oos.
func (c *Client) hello(ctx context.Context, exclude []string, oos map[string]map[string]any) (target, error) {
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return target{}, &NoDataNode{Unreachable: err}
	}
	defer func() { _ = sub.Unsubscribe() }()
	b, _ := json.Marshal(hello{Exclude: exclude})
	if err := c.nc.PublishRequest(SubjectHello, inbox, b); err != nil {
		return target{}, &NoDataNode{Unreachable: err}
	}
	deadline := time.Now().Add(c.helloWait)
	for {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return target{}, ctx.Err()
			}
			if !c.nc.IsConnected() {
				return target{}, &NoDataNode{OutOfService: oos, Unreachable: fmt.Errorf("not connected (%s)", c.nc.Status())}
			}
			return target{}, &NoDataNode{OutOfService: oos}
		}
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			// No responders: no data node listens at all.
			return target{}, &NoDataNode{OutOfService: oos}
		}
		var a helloAnswer
		if json.Unmarshal(m.Data, &a) != nil || a.Node == "" {
			continue
		}
		if a.Subject != "" {
			return target{node: a.Node, subject: a.Subject}, nil
		}
		if len(oos) == 0 {
			deadline = minTime(deadline, time.Now().Add(afterOutOfService))
		}
		oos[a.Node] = a.OutOfService
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
