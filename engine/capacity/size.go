// Package capacity sizes the state logs' byte ceilings together, once,
// when a node creates their streams (Replication › How the byte ceilings
// are sized): what the broker can grant, the logs' share of it, each
// log's ask, and the fit. It is arithmetic over what the node read from
// the broker and the stream volume, so every rule of the page is a row of
// one table test; reading those figures is the broker's and the node's
// job, and the sentence a refused reservation answers is built here so
// the boot and `crewlet retention set-capacity` say it alike.
package capacity

import "math/big"

// GiB is 2^30 bytes.
const GiB int64 = 1 << 30

// Floor is the smallest ceiling an unset log is created with.
const Floor = GiB

// Ask is how a log asks for its ceiling when its Tier A field is unset.
// Each domain's statelog.Spec names its own, so a domain a later build
// adds (the vectors, the usage log) slots into the same table.
type Ask struct {
	kind   askKind
	of     string
	lo, hi int64
	fixed  int64
}

type askKind uint8

const (
	askNone askKind = iota
	askVolumeQuarter
	askQuarterOf
	askFixed
)

// VolumeQuarter asks for a quarter of the stream volume's free space,
// kept within lo..hi (the mutation log: 4..64 GiB; the vector changelog
// the same quarter).
func VolumeQuarter(lo, hi int64) Ask { return Ask{kind: askVolumeQuarter, lo: lo, hi: hi} }

// QuarterOf asks for a quarter of another log's ceiling — the one set for
// it, or the one it derived — because both hold a trailing window and
// this one grows at about a quarter of the rate (the knowledge base's).
func QuarterOf(stream string) Ask { return Ask{kind: askQuarterOf, of: stream} }

// Fixed asks for n bytes whatever the volume (the usage log: 1 GiB).
func Fixed(n int64) Ask { return Ask{kind: askFixed, fixed: n} }

// Log is one state log as the sizing sees it.
type Log struct {
	// Name is the domain's name (tracker, pages), for the sentences.
	Name   string
	Stream string
	// Field is the Tier A field that sets its ceiling.
	Field string
	// Set is that field's value; 0 when unset.
	Set int64
	Ask Ask
	// Exists says the log's stream exists with the ceiling Held. A log
	// whose ceiling could not be read counts as absent.
	Exists bool
	Held   int64
}

// Grant is what the broker can grant: its storage limit and what the
// ceilings it already granted reserve of it (every stream's, not only
// the logs'). Limit <= 0: the broker states no limit, or it could not be
// read.
type Grant struct {
	Limit    int64
	Reserved int64
}

// Left is what the broker has left to reserve; meaningless without a
// limit.
func (g Grant) Left() int64 { return max(g.Limit-g.Reserved, 0) }

// Input is everything the sizing reads.
type Input struct {
	Grant Grant
	// VolumeFree is the free space on the volume holding stream.store_dir.
	VolumeFree int64
	// Logs are the node's state logs, in its domain order.
	Logs []Log
}

// Sized is one log's outcome.
type Sized struct {
	Log
	// Asked is what the log asks for (its field where set).
	Asked int64
	// Fit is what the log would be created with if no log existed yet:
	// the figure every boot reports an existing stream against.
	Fit int64
	// Create is what a missing log is created with; for an existing one
	// its ceiling, Held.
	Create int64
}

// Short says a log is created below its fit.
func (s Sized) Short() bool { return !s.Exists && s.Create < s.Fit }

// Plan is the sizing's answer.
type Plan struct {
	// Share is the logs' share of the broker.
	Share int64
	Logs  []Sized
}

// Size sizes the logs as the page says. It never fails: whether the
// broker can honour what it decided is Plan.Check's question.
func Size(in Input) Plan {
	asks := make([]int64, len(in.Logs))
	for i, l := range in.Logs {
		asks[i] = ask(in, l)
	}
	p := Plan{Share: share(in)}
	// The empty-broker fit: every log created, none existing.
	fit := fitCreated(p.Share, 0, in.Logs, asks, func(Log) bool { return true })
	var held int64
	for _, l := range in.Logs {
		if l.Exists {
			held += l.Held
		}
	}
	now := fitCreated(p.Share, held, in.Logs, asks, func(l Log) bool { return !l.Exists })
	for i, l := range in.Logs {
		s := Sized{Log: l, Asked: asks[i], Fit: fit[i], Create: l.Held}
		if !l.Exists {
			s.Create = min(now[i], fit[i])
			if l.Set > 0 {
				s.Create = l.Set
			}
		}
		p.Logs = append(p.Logs, s)
	}
	return p
}

// share is the logs' half: of what the broker can grant, with the
// ceilings the logs already hold counted as theirs (so a restart divides
// the same half the first boot did); with no limit to read, of the
// volume's free space, which already contains what the logs hold.
func share(in Input) int64 {
	if in.Grant.Limit <= 0 {
		return max(in.VolumeFree, 0) / 2
	}
	var held int64
	for _, l := range in.Logs {
		if l.Exists {
			held += l.Held
		}
	}
	return max(in.Grant.Left()+held, 0) / 2
}

// ask is what one log asks for.
func ask(in Input, l Log) int64 {
	if l.Set > 0 {
		return l.Set
	}
	return derived(in, l.Ask, 0)
}

// derived is an unset log's ask by its rule; depth bounds a chain of
// QuarterOf.
func derived(in Input, a Ask, depth int) int64 {
	switch a.kind {
	case askVolumeQuarter:
		return min(max(in.VolumeFree/4, a.lo), a.hi)
	case askFixed:
		return a.fixed
	case askQuarterOf:
		if depth < 4 {
			for _, o := range in.Logs {
				if o.Stream == a.of {
					if o.Set > 0 {
						return o.Set / 4
					}
					return derived(in, o.Ask, depth+1) / 4
				}
			}
		}
		return max(in.VolumeFree/4, 0) / 4
	}
	return Floor
}

// fitCreated sizes the logs create selects out of share, after held (the
// ceilings existing logs hold) and then the set ceilings come off: the
// unset ones share what is left in proportion to their asks, never past
// them and never below the floor. Entries of logs not created are 0.
func fitCreated(share, held int64, logs []Log, asks []int64, create func(Log) bool) []int64 {
	out := make([]int64, len(logs))
	rem := share - held
	var askSum int64
	for i, l := range logs {
		switch {
		case !create(l):
		case l.Set > 0:
			out[i] = l.Set
			rem -= l.Set
		default:
			askSum += asks[i]
		}
	}
	rem = max(rem, 0)
	for i, l := range logs {
		if !create(l) || l.Set > 0 {
			continue
		}
		v := asks[i]
		if askSum > rem {
			v = scaled(asks[i], rem, askSum)
		}
		out[i] = max(v, Floor)
	}
	return out
}

// scaled is a*b/c without overflow (ceilings are up to 2^36, limits far
// larger), rounded down.
func scaled(a, b, c int64) int64 {
	if c <= 0 {
		return 0
	}
	r := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	return r.Quo(r, big.NewInt(c)).Int64()
}
