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
	// DefaultAttemptTimeout bounds one data node's answer to a call: past
	// it the node is taken to be silent, and a call safe to resend is
	// offered to another. It is well past a write's 5 s wait and a read's
	// 2 s budget.
	DefaultAttemptTimeout = 20 * time.Second
	// maxOffers bounds how many data nodes one call is offered to.
	maxOffers = 8
)

// Client is a node without data: it sends calls to the data node that
// first answered its hello, and keeps that one until it is out of service
// or gone. It is the one place that decides where a call goes next (Call).
type Client struct {
	nc             *nats.Conn
	log            *slog.Logger
	helloWait      time.Duration
	attemptTimeout time.Duration
	owned          bool

	mu      sync.Mutex
	current *target
	// skip are data nodes this client never offers a call to (a data
	// node sending a seat's call on excludes itself).
	skip []string
}

type target struct{ node, subject string }

// Call is one call to carry to a data node.
type Call struct {
	// Body is sent as it is; the data node's Handler reads it.
	Body []byte
	// Resendable says the call may be offered to another node after one
	// took it and gave no answer: it reads, or it writes under an op_id,
	// which the ledger answers on any node where a copy already ran.
	Resendable bool
	// Refusal reads the refusal an answer carries, nil for any other
	// answer; the call moves on a refusal the code table says proves it
	// ran nowhere on that node (engine.TryElsewhere). A nil Refusal reads
	// none: every answer is the call's.
	Refusal func(answer []byte) *engine.Refusal
}

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

// Refusal is e as the caller is answered: the call may have run, so it
// says how to find out rather than to retry blind.
func (e *NoAnswer) Refusal() *engine.Refusal {
	return engine.Refuse(engine.CodeBrokerUnreachable,
		"data node %s took this call and did not answer in time; it may have run there. Read the object to see, and repeat a write with the op_id you brought, if any.", e.Node)
}

// Refusal is e as the caller is answered: the call ran nowhere.
func (e *NoDataNode) Refusal() *engine.Refusal {
	if e.Unreachable != nil {
		return engine.Refuse(engine.CodeBrokerUnreachable, "the broker this node joined did not answer (%v). Retry; if it persists, check the brokers at the --join URL.", e.Unreachable)
	}
	r := engine.Refuse(engine.CodeNoDataNode, "%s. The call ran nowhere: retry after the hint; `crewlet retention status` on a data node names each node's standing.", e.Error())
	if len(e.OutOfService) > 0 {
		r = r.With("out_of_service", e.OutOfService)
	}
	return r
}

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
	return &Client{nc: nc, log: logger.With(engine.LogComponent, engine.ComponentEstate), helloWait: DefaultHelloWait, attemptTimeout: DefaultAttemptTimeout}
}

// SetHelloWait changes how long a hello waits for a sound data node.
func (c *Client) SetHelloWait(d time.Duration) { c.helloWait = d }

// SetAttemptTimeout changes how long one data node has to answer a call
// (default DefaultAttemptTimeout); d <= 0 keeps the default.
func (c *Client) SetAttemptTimeout(d time.Duration) {
	if d > 0 {
		c.attemptTimeout = d
	}
}

// Exclude makes the client never offer a call to nodes: a data node
// sending a call on to the next holder names itself.
func (c *Client) Exclude(nodes ...string) {
	c.mu.Lock()
	c.skip = append(c.skip, nodes...)
	c.mu.Unlock()
}

// Close closes the connection Dial opened.
func (c *Client) Close() {
	if c.owned {
		c.nc.Close()
	}
}

// Call offers call to sound data nodes, one at a time, until one gives an
// answer that is the call's, and returns it. This loop is the one rule
// for moving a call (a node without data has no other):
//   - a node that has gone (nobody holds its subject) or answers that its
//     copy is out of service did not run the call: the call moves on;
//   - a node that answers a refusal proving the call ran nowhere there
//     (call.Refusal, engine.TryElsewhere) did not either: the call moves
//     on, and if no node is left that refusal is the answer;
//   - a node that takes the call and gives no answer within the attempt
//     timeout may have run it: the call moves on only when it is
//     Resendable and ctx lives, else Call answers *NoAnswer naming it.
//
// With no data node left to take it, Call answers *NoDataNode, unless a
// node took it without answering (then *NoAnswer: it may have run) or
// refused it as above (then that refusal, as the node answered it).
func (c *Client) Call(ctx context.Context, call Call) (Reply, error) {
	c.mu.Lock()
	exclude := slices.Clone(c.skip)
	c.mu.Unlock()
	var (
		oos     = map[string]map[string]any{}
		refused *Reply
		silent  *NoAnswer
	)
	for range maxOffers {
		t, err := c.target(ctx, exclude, oos)
		if err != nil {
			return untaken(err, refused, silent)
		}
		resp, unanswered, err := c.send(ctx, t, call.Body)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			// Nobody holds its subject: the node is gone, and the call
			// was delivered to nobody.
			c.moved(t, "gone", nil)
			exclude = append(exclude, t.node)
			continue
		case unanswered:
			// A paused or cut-off node answers no hello, so the next call
			// passes it over.
			c.drop(t)
			resend := call.Resendable && ctx.Err() == nil
			c.log.Warn("estate_call_unanswered", "data_node", t.node, "resend", resend, engine.LogErr, err.Error())
			silent = &NoAnswer{Node: t.node, Err: err}
			if !resend {
				return Reply{}, silent
			}
			exclude = append(exclude, t.node)
			continue
		case err != nil:
			return untaken(&NoDataNode{Unreachable: err}, refused, silent)
		}
		if code := resp.Header.Get(HeaderOutOfService); code != "" {
			var r map[string]any
			_ = json.Unmarshal(resp.Data, &r)
			oos[t.node] = r
			c.moved(t, code, r)
			exclude = append(exclude, t.node)
			continue
		}
		reply := Reply{Node: t.node, Body: resp.Data}
		if call.Refusal != nil {
			if r := call.Refusal(resp.Data); r != nil && engine.TryElsewhere(r) {
				c.drop(t)
				c.log.Info("estate_refusal_moved", "data_node", t.node, "refused", string(r.Code), "message", r.Message)
				refused = &reply
				exclude = append(exclude, t.node)
				continue
			}
		}
		return reply, nil
	}
	return untaken(&NoDataNode{OutOfService: oos}, refused, silent)
}

// send offers body to t within one attempt's time; unanswered says t may
// have taken it and gave no answer before that time (or ctx) ended.
func (c *Client) send(ctx context.Context, t target, body []byte) (resp *nats.Msg, unanswered bool, err error) {
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	msg := nats.NewMsg(t.subject)
	msg.Data = body
	if dl, ok := actx.Deadline(); ok {
		msg.Header.Set(headerTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	resp, err = c.nc.RequestMsgWithContext(actx, msg)
	return resp, err != nil && !errors.Is(err, nats.ErrNoResponders) && actx.Err() != nil, err
}

// untaken is the answer to a call no data node is left to take: a node
// that took it without answering may have run it, which outweighs every
// other answer; else a refusal that moved it is the answer, as its node
// gave it; else why no node took it.
func untaken(why error, refused *Reply, silent *NoAnswer) (Reply, error) {
	switch {
	case silent != nil:
		return Reply{}, silent
	case refused != nil:
		return *refused, nil
	}
	return Reply{}, why
}

// Forward is Call for a surface that knows the engine's vocabulary and
// nothing of this package (mcp.Forwarder): the answering node and its
// answer, or an *engine.Refusal saying the call was taken by no data
// node, or may have run on one that gave no answer.
func (c *Client) Forward(ctx context.Context, body []byte, resendable bool, refusal func(answer []byte) *engine.Refusal) (string, []byte, error) {
	reply, err := c.Call(ctx, Call{Body: body, Resendable: resendable, Refusal: refusal})
	if err != nil {
		return "", nil, refusalOf(err)
	}
	return reply.Node, reply.Body, nil
}

// refusalOf is a Call error as the caller is answered.
func refusalOf(err error) *engine.Refusal {
	var silent *NoAnswer
	var none *NoDataNode
	switch {
	case errors.As(err, &silent):
		return silent.Refusal()
	case errors.As(err, &none):
		return none.Refusal()
	}
	// The caller's own context ended before any node took the call.
	return engine.Refuse(engine.CodeBrokerUnreachable, "the call could not be sent to a data node: %v. Retry.", err)
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
