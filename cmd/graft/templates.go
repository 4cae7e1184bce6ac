package main

import "github.com/spf13/cobra"

func newTemplatesCmd() *cobra.Command { return notYet("templates") }
