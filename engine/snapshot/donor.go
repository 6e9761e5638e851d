package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
)

// OfferSubject is where an adopter asks every data node what it could
// donate; DonateSubject(node) is where it asks one node for a snapshot.
const OfferSubject = "crewlet.snapshot.offer"

// DonateSubject is node's donation subject.
func DonateSubject(node string) string { return "crewlet.snapshot.donate." + node }

// Offer is a peer's answer on OfferSubject: its checkpoints.
type Offer struct {
	Node    string           `json:"node"`
	Domains map[string]Point `json:"domains"`
}

type donateRequest struct {
	To string `json:"to"`
}

type donateReply struct {
	Manifest *Manifest `json:"manifest,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// DonorConfig is what a donor answers with.
type DonorConfig struct {
	Conn *nats.Conn
	Node string
	// Offer returns this node's checkpoints, and false while its copy is
	// out of service (it then offers nothing).
	Offer func(ctx context.Context) (Offer, bool)
	// Donate takes a fresh snapshot for the node named to, puts it in the
	// broker's object store and returns its manifest.
	Donate func(ctx context.Context, to string) (Manifest, error)
	Logger *slog.Logger
}

// Donor answers offers and donations until Close.
type Donor struct {
	subs []*nats.Subscription
}

// DonateTimeout bounds one donation: the donor's snapshot and its upload.
const DonateTimeout = 5 * time.Minute

// Serve starts answering on OfferSubject and DonateSubject(cfg.Node).
func Serve(cfg DonorConfig) (*Donor, error) {
	d := &Donor{}
	offer, err := cfg.Conn.Subscribe(OfferSubject, func(m *nats.Msg) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o, ok := cfg.Offer(ctx)
		if !ok {
			return
		}
		b, _ := json.Marshal(o)
		m.Respond(b)
	})
	if err != nil {
		return nil, err
	}
	d.subs = append(d.subs, offer)
	donate, err := cfg.Conn.Subscribe(DonateSubject(cfg.Node), func(m *nats.Msg) {
		// A donation takes as long as a snapshot: off the delivery loop.
		go func() {
			var req donateRequest
			var rep donateReply
			if err := json.Unmarshal(m.Data, &req); err != nil || req.To == "" {
				rep.Error = "a donation request names the node it is for"
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), DonateTimeout)
				mf, err := cfg.Donate(ctx, req.To)
				cancel()
				if err != nil {
					rep.Error = err.Error()
				} else {
					rep.Manifest = &mf
				}
			}
			b, _ := json.Marshal(rep)
			m.Respond(b)
		}()
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.subs = append(d.subs, donate)
	return d, cfg.Conn.Flush()
}

// Close stops answering.
func (d *Donor) Close() {
	if d == nil {
		return
	}
	for _, s := range d.subs {
		s.Unsubscribe()
	}
}

// Offers asks every data node what it could donate and gathers the
// answers that arrive within window.
func Offers(ctx context.Context, conn *nats.Conn, window time.Duration) ([]Offer, error) {
	inbox := conn.NewRespInbox()
	ch := make(chan *nats.Msg, 64)
	sub, err := conn.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := conn.PublishRequest(OfferSubject, inbox, nil); err != nil {
		return nil, err
	}
	t := time.NewTimer(window)
	defer t.Stop()
	var out []Offer
	for {
		select {
		case m := <-ch:
			var o Offer
			if json.Unmarshal(m.Data, &o) == nil && o.Node != "" {
				out = append(out, o)
			}
		case <-t.C:
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

// Ask asks donor for a fresh snapshot for the node to and returns its
// manifest once the donor has put it in the object store.
func Ask(ctx context.Context, conn *nats.Conn, donor, to string) (Manifest, error) {
	b, _ := json.Marshal(donateRequest{To: to})
	ctx, cancel := context.WithTimeout(ctx, DonateTimeout)
	defer cancel()
	msg, err := conn.RequestWithContext(ctx, DonateSubject(donor), b)
	if err != nil {
		return Manifest{}, fmt.Errorf("snapshot: ask %s for a snapshot: %w", donor, err)
	}
	var rep donateReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return Manifest{}, fmt.Errorf("snapshot: %s answered something that is not a donation: %w", donor, err)
	}
	if rep.Error != "" || rep.Manifest == nil {
		return Manifest{}, fmt.Errorf("snapshot: %s could not donate: %s", donor, rep.Error)
	}
	return *rep.Manifest, nil
}

// logger is l with the snapshotter's component.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return l.With(engine.LogComponent, engine.ComponentStatelog)
}
