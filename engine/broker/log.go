package broker

import (
	"fmt"
	"log/slog"
	"strings"

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
