package main

import "github.com/spf13/cobra"

func newServeCmd() *cobra.Command { return notYet("serve") }
