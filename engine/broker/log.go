package broker

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
)

// slogLogger adapts nats-server's Logger to slog under component=broker.
type slogLogger struct{ l *slog.Logger }

func newSlogLogger(l *slog.Logger) *slogLogger {
	return &slogLogger{l: l.With(engine.LogComponent, engine.ComponentBroker)}
}

func line(format string, v ...any) string { return strings.TrimSpace(fmt.Sprintf(format, v...)) }

func (s *slogLogger) Noticef(format string, v ...any) { s.l.Info(line(format, v...)) }
func (s *slogLogger) Warnf(format string, v ...any)   { s.l.Warn(line(format, v...)) }
func (s *slogLogger) Fatalf(format string, v ...any)  { s.l.Error(line(format, v...), "fatal", true) }
func (s *slogLogger) Errorf(format string, v ...any)  { s.l.Error(line(format, v...)) }
func (s *slogLogger) Debugf(format string, v ...any)  { s.l.Debug(line(format, v...)) }
func (s *slogLogger) Tracef(format string, v ...any)  { s.l.Debug(line(format, v...), "trace", true) }

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
