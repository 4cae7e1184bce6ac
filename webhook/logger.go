package webhook

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/graftdev/graft/inject"
)

// NewLogger returns graft's JSON logger writing to w at level, with its
// level adjustable at run time. Sampling keeps a flood of identical
// messages from stalling the request path: per message and per second,
// the first 100 are logged and then one in 100.
func NewLogger(w io.Writer, level string) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, zap.AtomicLevel{}, err
	}
	al := zap.NewAtomicLevelAt(lvl)
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	// Seconds as a float: Duration.String would allocate on every line.
	enc.EncodeDuration = zapcore.SecondsDurationEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), al)
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	return zap.New(core), al, nil
}

func parseLevel(s string) (zapcore.Level, error) {
	switch s {
	case "debug", "info", "warn", "error":
		l, err := zapcore.ParseLevel(s)
		if err != nil {
			return 0, fmt.Errorf("log level %q: %w", s, err)
		}
		return l, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// logAdmission writes the one line per admission: skips at debug, the rest
// at info. Check first, so a sampled-out or disabled line costs nothing.
//
// The Result's UID, Namespace and Name alias the request body, which
// fasthttp reuses once the handler returns, and a core may keep fields
// beyond Write (observers, buffering). So they are copied, into one fresh
// buffer that is never written again: one allocation for the three
// strings, one for the fields.
func logAdmission(log *zap.Logger, res *inject.Result, d time.Duration) {
	lvl := zapcore.InfoLevel
	if res.Decision == inject.DecisionSkip {
		lvl = zapcore.DebugLevel
	}
	ce := log.Check(lvl, "admission")
	if ce == nil {
		return
	}
	buf := make([]byte, 0, len(res.UID)+len(res.Namespace)+len(res.Name))
	buf = append(append(append(buf, res.UID...), res.Namespace...), res.Name...)
	uid, rest := buf[:len(res.UID)], buf[len(res.UID):]
	ns, pod := rest[:len(res.Namespace)], rest[len(res.Namespace):]
	ce.Write(
		zap.String("uid", bytesString(uid)),
		zap.String("namespace", bytesString(ns)),
		zap.String("pod", bytesString(pod)),
		zap.String("profile", res.Profile),
		zap.String("revision", res.Revision),
		zap.String("decision", res.Decision.String()),
		zap.String("reason", res.Reason.String()),
		zap.Duration("duration", d),
		zap.Int("patch_ops", res.PatchOps),
		zap.Bool("dry_run", res.DryRun),
	)
}
