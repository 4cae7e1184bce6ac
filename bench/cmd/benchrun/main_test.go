package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, o *options)
		wantErr string
	}{
		{"quick preset", []string{"-quick"}, func(t *testing.T, o *options) {
			p, err := o.plan(true)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(p.Corpora, ",") != "small,large" || p.Duration != 2*time.Second || p.OpenDuration != 2*time.Second || !p.Pin {
				t.Errorf("quick plan: %+v", p)
			}
			if p.OpenRates["small"] != 10000 || len(p.Peers) != 3 || p.Peers[0].Args[0] != "serve" {
				t.Errorf("quick plan: open %v peers %+v", p.OpenRates, p.Peers)
			}
		}, ""},
		{"quick keeps explicit flags", []string{"-quick", "-d", "7s", "-corpora", "huge"}, func(t *testing.T, o *options) {
			if o.duration != 7*time.Second || o.corpora != "huge" {
				t.Errorf("options: %+v", o)
			}
		}, ""},
		{"graft args", []string{"-graft-args", "--log-level error", "-peers", "graft"}, func(t *testing.T, o *options) {
			p, _ := o.plan(false)
			if strings.Join(p.Peers[0].ExtraArgs, " ") != "--log-level error" {
				t.Errorf("extra args %q", p.Peers[0].ExtraArgs)
			}
		}, ""},
		{"bad open", []string{"-open", "small"}, nil, "corpus=rate"},
		{"bad peer", []string{"-peers", "istio"}, nil, "unknown peer"},
		{"stray argument", []string{"now"}, nil, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(tt.args, io.Discard)
			if err == nil {
				_, err = o.plan(false)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}
