package main

import "github.com/spf13/cobra"

func newExplainCmd() *cobra.Command { return notYet("explain") }
