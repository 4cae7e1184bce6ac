package webhook

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
)

// FileConfig is the --config file: the engine's configuration at the top
// level (defaultProfile, profiles, excludedNamespaces) and the server's
// settings under `server:`.
type FileConfig struct {
	inject.Config
	Server Settings `json:"server"`
}

// Settings are the server's own knobs. Flags override the file.
type Settings struct {
	// Addr is the TLS listen address for the webhook.
	Addr string `json:"addr,omitempty"`
	// AdminAddr is the plain-HTTP address for /metrics, /healthz, /readyz.
	AdminAddr string `json:"adminAddr,omitempty"`
	// Budget bounds the engine's work on one request.
	Budget Duration `json:"budget,omitempty"`
	// TimeoutMargin is kept free of the API server's ?timeout= for the
	// network and the TLS exchange.
	TimeoutMargin Duration `json:"timeoutMargin,omitempty"`
	// MaxBodyBytes is the largest request body read; larger ones get 413.
	MaxBodyBytes int `json:"maxBodyBytes,omitempty"`
	// MaxInFlight sheds requests beyond this many in the engine at once,
	// answering them per the profile's failure mode. 0: the default.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// TLSMinVersion is "1.2" or "1.3".
	TLSMinVersion string   `json:"tlsMinVersion,omitempty"`
	ReadTimeout   Duration `json:"readTimeout,omitempty"`
	WriteTimeout  Duration `json:"writeTimeout,omitempty"`
	// IdleTimeout closes idle keep-alive connections so the API server's
	// connections rotate across replicas.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// ShutdownGrace is how long in-flight requests may take to drain.
	ShutdownGrace Duration `json:"shutdownGrace,omitempty"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty"`
	// TLSCert and TLSKey are the serving certificate and key (PEM). Both
	// empty: a self-signed certificate is generated at start.
	TLSCert string `json:"tlsCert,omitempty"`
	TLSKey  string `json:"tlsKey,omitempty"`
	// ClientCA, when set, requires API server client certificates signed
	// by one of its CAs (PEM).
	ClientCA string `json:"clientCA,omitempty"`
	// TemplatesDir overlays the built-in templates and is watched.
	TemplatesDir string `json:"templatesDir,omitempty"`
}

// Defaults for Settings.
const (
	DefaultAddr          = ":8443"
	DefaultAdminAddr     = ":8080"
	DefaultBudget        = 200 * time.Millisecond
	DefaultTimeoutMargin = 100 * time.Millisecond
	DefaultMaxBodyBytes  = 7 << 20
	DefaultMaxInFlight   = 1024
	DefaultReadTimeout   = 10 * time.Second
	DefaultWriteTimeout  = 10 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultShutdownGrace = 25 * time.Second
)

// ErrSettings marks invalid server settings.
var ErrSettings = errors.New("invalid server settings")

// defaults fills in unset settings and validates them.
func (s *Settings) defaults() error {
	setStr := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	setDur := func(v *Duration, d time.Duration) {
		if v.Duration == 0 {
			v.Duration = d
		}
	}
	setStr(&s.Addr, DefaultAddr)
	setStr(&s.AdminAddr, DefaultAdminAddr)
	setStr(&s.TLSMinVersion, "1.2")
	setStr(&s.LogLevel, "info")
	setDur(&s.Budget, DefaultBudget)
	setDur(&s.TimeoutMargin, DefaultTimeoutMargin)
	setDur(&s.ReadTimeout, DefaultReadTimeout)
	setDur(&s.WriteTimeout, DefaultWriteTimeout)
	setDur(&s.IdleTimeout, DefaultIdleTimeout)
	setDur(&s.ShutdownGrace, DefaultShutdownGrace)
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.MaxInFlight == 0 {
		s.MaxInFlight = DefaultMaxInFlight
	}

	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"budget", s.Budget}, {"timeoutMargin", s.TimeoutMargin}, {"readTimeout", s.ReadTimeout},
		{"writeTimeout", s.WriteTimeout}, {"idleTimeout", s.IdleTimeout}, {"shutdownGrace", s.ShutdownGrace},
	} {
		if d.v.Duration < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrSettings, d.name, d.v.Duration)
		}
	}
	if s.MaxBodyBytes < 0 {
		return fmt.Errorf("%w: maxBodyBytes %d is negative", ErrSettings, s.MaxBodyBytes)
	}
	if s.MaxInFlight < 0 {
		return fmt.Errorf("%w: maxInFlight %d is negative (0 means the default)", ErrSettings, s.MaxInFlight)
	}
	if _, err := s.tlsVersion(); err != nil {
		return err
	}
	if _, err := parseLevel(s.LogLevel); err != nil {
		return fmt.Errorf("%w: logLevel: %w", ErrSettings, err)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("%w: tlsCert and tlsKey go together (give both, or neither for a self-signed certificate)", ErrSettings)
	}
	return nil
}

func (s *Settings) tlsVersion() (uint16, error) {
	switch s.TLSMinVersion {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("%w: tlsMinVersion %q: want \"1.2\" or \"1.3\"", ErrSettings, s.TLSMinVersion)
}

// ParseConfig parses a config file's contents strictly: unknown or
// duplicate fields are errors. Without profiles, the built-in default
// profiles apply. Settings are not yet defaulted (flags come first).
func ParseConfig(data []byte) (FileConfig, error) {
	var fc FileConfig
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return FileConfig{}, fmt.Errorf("parse config: %w", err)
	}
	if len(fc.Profiles) == 0 {
		def := inject.DefaultConfig()
		fc.Profiles = def.Profiles
		if fc.DefaultProfile == "" {
			fc.DefaultProfile = def.DefaultProfile
		}
	}
	return fc, nil
}

// LoadConfig reads the config file at path; "" means no file: the
// built-in defaults.
func LoadConfig(path string) (FileConfig, error) {
	if path == "" {
		return FileConfig{Config: inject.DefaultConfig()}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return FileConfig{}, fmt.Errorf("config: %w", err)
	}
	fc, err := ParseConfig(data)
	if err != nil {
		return FileConfig{}, fmt.Errorf("config %s: %w", path, err)
	}
	return fc, nil
}

// Duration is a time.Duration written as a Go duration string ("200ms").
type Duration struct{ time.Duration }

// UnmarshalJSON accepts "200ms" style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"200ms\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(d.Duration.String())), nil
}
