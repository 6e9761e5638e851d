package fleettest

import (
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its own loopback port to a target.
// Cut closes every connection and refuses new ones until Heal; Delay holds
// every forwarded chunk for a while, in both directions; Freeze forwards
// nothing until Heal while every connection stays open, which is what a
// peer sees of a paused (SIGSTOP) or hung process: no reset, no bytes.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cut    bool
	delay  time.Duration
	frozen chan struct{} // non-nil while frozen; closed by Heal
	conns  map[net.Conn]struct{}
	done   bool
}

// NewProxy listens on 127.0.0.1:0 and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is host:port of the proxy's listener.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut || p.done {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *Proxy) forward(in net.Conn) {
	out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.cut || p.done {
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				// While frozen, what was read waits here, and this pipe
				// reads no more: the sender's socket fills, as it would
				// against a stopped process.
				p.waitThawed()
				if d := p.currentDelay(); d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Either side ending ends both: a half-open route is not a route.
		dst.Close()
		src.Close()
	}
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

func (p *Proxy) waitThawed() {
	p.mu.Lock()
	f := p.frozen
	p.mu.Unlock()
	if f != nil {
		<-f
	}
}

// Freeze stops forwarding in both directions, keeping every connection
// open, until Heal.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *Proxy) currentDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// Cut closes every forwarded connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Delay holds every forwarded chunk for d (0 removes the delay).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Heal accepts connections again, removes any delay and thaws a freeze:
// what was held flows on.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.delay = 0
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
	p.mu.Unlock()
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	p.ln.Close()
	p.Heal()
	p.Cut()
}

var _ io.Closer = (*net.TCPConn)(nil)
