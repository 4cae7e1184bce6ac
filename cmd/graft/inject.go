package main

import "github.com/spf13/cobra"

func newInjectCmd() *cobra.Command { return notYet("inject") }
