package enginetest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// AckDropper is a TCP proxy between a NATS client and its server that
// understands just enough of the protocol to drop, on the way back to the
// client, the next JetStream publish acknowledgements (a real lost ack:
// the message is stored, the client never hears so) and, when asked, the
// next JetStream API answers (so the log cannot be asked either).
type AckDropper struct {
	ln     net.Listener
	target string
	acks   atomic.Int32
	// batchAcks counts the atomic batches' commit answers still to drop.
	batchAcks atomic.Int32
	api       atomic.Int32
	// apiKind, when set, limits the API answers dropped to that type.
	apiKind atomic.Pointer[string]
	Dropped atomic.Int32
	mu      sync.Mutex
	conns   []net.Conn
}

// NewAckDropper listens on loopback and forwards to target (host:port or
// nats://host:port). It closes when the test ends.
func NewAckDropper(t testing.TB, target string) *AckDropper {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &AckDropper{ln: ln, target: strings.TrimPrefix(target, "nats://")}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// URL is where the client connects.
func (p *AckDropper) URL() string { return "nats://" + p.ln.Addr().String() }

// DropAcks drops the next n publish acknowledgements.
func (p *AckDropper) DropAcks(n int) { p.acks.Add(int32(n)) }

// DropBatchAcks drops the next n answers to atomic batch commits (an ack
// naming its batch), letting single appends' acks through.
func (p *AckDropper) DropBatchAcks(n int) { p.batchAcks.Add(int32(n)) }

// DropAPI drops the next n JetStream API answers (stream info, message
// gets).
func (p *AckDropper) DropAPI(n int) { p.api.Add(int32(n)) }

// DropAPIOf drops the next n JetStream API answers of one type (for
// example "stream_info_response"), letting every other answer through.
func (p *AckDropper) DropAPIOf(kind string, n int) {
	p.apiKind.Store(&kind)
	p.api.Add(int32(n))
}

// apiMatches says whether an API answer is of the type being dropped.
func (p *AckDropper) apiMatches(payload []byte) bool {
	k := p.apiKind.Load()
	return k == nil || bytes.Contains(payload[:min(len(payload), 96)], []byte(*k))
}

// Close stops the proxy and its connections.
func (p *AckDropper) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *AckDropper) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go func() { p.downstream(s, c); c.Close() }()
	}
}

func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// downstream copies server to client frame by frame, dropping what it was
// told to.
func (p *AckDropper) downstream(s, c net.Conn) {
	r := bufio.NewReaderSize(s, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var body []byte
		if bytes.HasPrefix(line, []byte("MSG ")) || bytes.HasPrefix(line, []byte("HMSG ")) {
			f := strings.Fields(string(line))
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return
			}
			body = make([]byte, size+2)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			payload := body
			if bytes.HasPrefix(line, []byte("HMSG ")) {
				if hdr, err := strconv.Atoi(f[len(f)-2]); err == nil && hdr <= len(body) {
					payload = body[hdr:]
				}
			}
			ack := bytes.HasPrefix(payload, []byte(`{"stream":`)) && bytes.Contains(payload, []byte(`"seq":`))
			switch {
			case ack && bytes.Contains(payload, []byte(`"batch":`)) && take(&p.batchAcks):
				p.Dropped.Add(1)
				continue
			case ack && take(&p.acks):
				p.Dropped.Add(1)
				continue
			case bytes.HasPrefix(payload, []byte(`{"type":"io.nats.jetstream.api.`)) && p.apiMatches(payload) && take(&p.api):
				p.Dropped.Add(1)
				continue
			}
		}
		if _, err := c.Write(append(line, body...)); err != nil {
			return
		}
	}
}

// Heal stops dropping anything.
func (p *AckDropper) Heal() {
	p.acks.Store(0)
	p.batchAcks.Store(0)
	p.api.Store(0)
	p.apiKind.Store(nil)
}
