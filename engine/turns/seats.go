package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// Placement is where a seat is held: the node its turns start on, since
// when, and the node it was claimed from.
type Placement struct {
	Seat      string    `json:"seat"`
	Node      string    `json:"node"`
	ClaimedAt time.Time `json:"claimed_at"`
	// From is the node that held the seat before this claim, if any.
	From       string    `json:"from,omitempty"`
	Turns      int       `json:"turns"`
	LastTurnAt time.Time `json:"last_turn_at"`
}

// Opened is a turn's start as its seat is answered: the turn, where its
// seat is held now, and whether this start claimed it.
type Opened struct {
	Started
	Placement Placement `json:"placement"`
	Claimed   bool      `json:"claimed"`
}

// Level says why a node may claim no new seat now (it is not level: its
// copy is behind the log's end or out of service), nil when it may.
type Level func(ctx context.Context) *engine.Refusal

// Claim places seat on node at the start of one of its turns. A seat the
// node holds already is kept whatever level says: lag does not move a
// node's seats. A seat held nowhere, or by another node, is claimed only
// when level answers nil; its refusal is the answer otherwise, and the
// seat stays where it was. claimed says this call moved the seat here.
func (u *Units) Claim(ctx context.Context, seat, node string, level Level) (p Placement, claimed bool, err error) {
	key := seatKey(seat)
	for attempt := 0; attempt < 16; attempt++ {
		cur, rev, err := u.readSeat(ctx, key)
		if err != nil {
			return Placement{}, false, fmt.Errorf("turns: seat %q: %w", seat, err)
		}
		now := u.clock.Now().UTC()
		next := cur
		if cur.Node == node {
			next.Turns++
			next.LastTurnAt = now
		} else {
			if level != nil {
				if r := level(ctx); r != nil {
					return cur, false, r
				}
			}
			next = Placement{Seat: seat, Node: node, ClaimedAt: now, From: cur.Node, Turns: 1, LastTurnAt: now}
		}
		data, _ := json.Marshal(next)
		if rev == 0 {
			_, err = u.kv.Create(ctx, key, data)
		} else {
			_, err = u.kv.Update(ctx, key, data, rev)
		}
		if err == nil && (rev == 0 || cur.Node != node) {
			err = u.index(ctx, seat)
		}
		if err == nil {
			if cur.Node != node {
				u.log.Info("turns_seat_claimed", "seat", seat, "node", node, "from", cur.Node)
			}
			return next, cur.Node != node, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return Placement{}, false, fmt.Errorf("turns: seat %q: %w", seat, err)
		}
	}
	return Placement{}, false, fmt.Errorf("turns: seat %q: too many concurrent claims", seat)
}

// indexKey holds the names of every seat ever placed: the seats are read
// through it, one Get each, rather than by listing the bucket's keys (a
// watch, which a replicated bucket electing a leader can leave hanging).
const indexKey = "seats"

// index adds seat to the index of placed seats.
func (u *Units) index(ctx context.Context, seat string) error {
	for attempt := 0; attempt < 16; attempt++ {
		var names []string
		var rev uint64
		entry, err := u.kv.Get(ctx, indexKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(entry.Value(), &names); err != nil {
				return err
			}
			rev = entry.Revision()
		}
		if slices.Contains(names, seat) {
			return nil
		}
		data, _ := json.Marshal(append(names, seat))
		if rev == 0 {
			_, err = u.kv.Create(ctx, indexKey, data)
		} else {
			_, err = u.kv.Update(ctx, indexKey, data, rev)
		}
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
	}
	return fmt.Errorf("turns: the seats' index: too many concurrent claims")
}

// Seats is every seat's placement, by seat.
func (u *Units) Seats(ctx context.Context) ([]Placement, error) {
	var names []string
	entry, err := u.kv.Get(ctx, indexKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(entry.Value(), &names); err != nil {
			return nil, err
		}
	}
	out := []Placement{}
	for _, seat := range names {
		p, rev, err := u.readSeat(ctx, seatKey(seat))
		if err != nil {
			return nil, err
		}
		if rev != 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seat < out[j].Seat })
	return out, nil
}

func (u *Units) readSeat(ctx context.Context, key string) (Placement, uint64, error) {
	entry, err := u.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return Placement{}, 0, nil
	case err != nil:
		return Placement{}, 0, err
	}
	var p Placement
	if err := json.Unmarshal(entry.Value(), &p); err != nil {
		return Placement{}, 0, err
	}
	return p, entry.Revision(), nil
}

func seatKey(seat string) string { return "seat." + hashOf(seat) }

// SeatsAnswer is the seats part of the retention answer: every seat's
// placement and, for every data node in the register, whether it claims
// new seats now.
type SeatsAnswer struct {
	Seats []Placement `json:"seats"`
	// Nodes says per data node whether it claims new seats: a node that
	// is not level keeps the seats it holds and claims no new ones.
	Nodes []NodeClaims `json:"nodes"`
	// Unread says why the placements could not be read (then Seats is
	// empty), empty when they were.
	Unread string `json:"unread,omitempty"`
}

// NodeClaims is one data node's standing for new seats.
type NodeClaims struct {
	Node   string `json:"node"`
	Claims bool   `json:"claims"`
	// Why says why it claims none, empty when it claims.
	Why string `json:"why,omitempty"`
	// Holds counts the seats the node holds.
	Holds int `json:"holds"`
}

// Answer is the seats answer: the placements, and each node's standing
// (why maps a data node to why it is not level, "" when it is).
func (u *Units) Answer(ctx context.Context, why map[string]string) SeatsAnswer {
	a := SeatsAnswer{Seats: []Placement{}, Nodes: []NodeClaims{}}
	seats, err := u.Seats(ctx)
	if err != nil {
		a.Unread = err.Error()
	} else {
		a.Seats = seats
	}
	holds := map[string]int{}
	for _, p := range a.Seats {
		if _, known := why[p.Node]; !known && holds[p.Node] == 0 {
			// A node without data holds seats and has no copy to be
			// behind: it reads the estate from the data nodes.
			a.Nodes = append(a.Nodes, NodeClaims{Node: p.Node, Claims: true})
		}
		holds[p.Node]++
	}
	for node, w := range why {
		a.Nodes = append(a.Nodes, NodeClaims{Node: node, Claims: w == "", Why: w})
	}
	for i := range a.Nodes {
		a.Nodes[i].Holds = holds[a.Nodes[i].Node]
	}
	sort.Slice(a.Nodes, func(i, j int) bool { return a.Nodes[i].Node < a.Nodes[j].Node })
	return a
}
