package main

import "github.com/spf13/cobra"

func newRenderCmd() *cobra.Command { return notYet("render") }
