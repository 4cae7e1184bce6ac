package main

import "github.com/spf13/cobra"

func newCertsCmd() *cobra.Command { return notYet("certs") }
