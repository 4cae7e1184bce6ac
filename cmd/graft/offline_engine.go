package main

import "github.com/graftdev/graft/inject"

// offlineEngine is what the offline subcommands run Pods through: the
// configuration's revisions (inject.Revisions, as graft serve does), or
// one inject.Engine.
type offlineEngine interface {
	Admit(dst, body []byte, o inject.Options) ([]byte, inject.Result, error)
	Explain(body []byte, o inject.Options) (*inject.Explanation, error)
	DefaultProfile() string
	Profiles() []string
}
