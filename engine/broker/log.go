package broker

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
)

// slogLogger adapts nats-server's Logger to slog under component=broker.
// It keeps the first fatal line: an embedded nats-server that cannot do
// what it was configured to (a route port it cannot listen on) says so
// only in its log and runs on.
type slogLogger struct {
	l     *slog.Logger
	fatal atomic.Pointer[string]
}

func newSlogLogger(l *slog.Logger) *slogLogger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &slogLogger{l: l.With(engine.LogComponent, engine.ComponentBroker)}
}

// fatalLine is the first fatal line the server logged, "" when none.
func (s *slogLogger) fatalLine() string {
	if p := s.fatal.Load(); p != nil {
		return *p
	}
	return ""
}

func line(format string, v ...any) string { return strings.TrimSpace(fmt.Sprintf(format, v...)) }

func (s *slogLogger) Noticef(format string, v ...any) { s.l.Info(line(format, v...)) }
func (s *slogLogger) Warnf(format string, v ...any)   { s.l.Warn(line(format, v...)) }
func (s *slogLogger) Fatalf(format string, v ...any) {
	msg := line(format, v...)
	s.fatal.CompareAndSwap(nil, &msg)
	s.l.Error(msg, "fatal", true)
}
func (s *slogLogger) Errorf(format string, v ...any) { s.l.Error(line(format, v...)) }
func (s *slogLogger) Debugf(format string, v ...any) { s.l.Debug(line(format, v...)) }
func (s *slogLogger) Tracef(format string, v ...any) { s.l.Debug(line(format, v...), "trace", true) }

// AsyncErrors logs what nats.go reports outside any call (a slow
// consumer, a permission violation) through logger under component
// broker. Left unset, nats.go writes these raw to stderr, which would
// break a JSON log.
func AsyncErrors(logger *slog.Logger) nats.Option {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := logger.With(engine.LogComponent, engine.ComponentBroker)
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		attrs := []any{engine.LogErr, err.Error()}
		if sub != nil {
			attrs = append(attrs, "subject", sub.Subject)
		}
		l.Warn("nats_async_error", attrs...)
	})
}
