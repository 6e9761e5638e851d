package httpedge

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// capLogEvery spaces the line saying the cap is reached: a node held at
// its cap would otherwise log one for every connection it takes.
const capLogEvery = time.Minute

// Listener returns ln holding at most max connections open at once
// (DefaultMaxConnections when max <= 0). Past it Accept waits for an open
// one to close, so the connections beyond wait in the kernel's backlog
// without a descriptor of this process, and the idle ones the server's
// timeouts close make room for them. A full listener logs
// http_connections_at_cap, at most once a minute.
func Listener(ln net.Listener, max int, logger *slog.Logger) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &capListener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}),
		log: logger.With(engine.LogComponent, engine.ComponentHTTP)}
}

type capListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	log       *slog.Logger
	loggedAt  atomic.Int64 // unix nanoseconds of the last at-cap line
}

func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.atCap()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &capConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *capListener) atCap() {
	now := time.Now().UnixNano()
	last := l.loggedAt.Load()
	if now-last < int64(capLogEvery) || !l.loggedAt.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("http_connections_at_cap", "max_connections", cap(l.slots),
		"hint", "new connections wait until open ones close; idle ones are closed by the server's timeouts. Raise http.max_connections if the load is legitimate.")
}

// Close stops Accept, including one waiting for a free slot.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// capConn frees its slot once, on its first Close.
type capConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection where the underlying one can:
// net/http does so before it closes a connection whose request body it
// left unread, so the client reads the answer before the close resets it.
func (c *capConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
