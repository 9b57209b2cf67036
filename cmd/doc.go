// Package cmd is idemgate's command line: the table of its subcommands
// (serve, demo, bench, the operator verbs, the offline ones), each one's
// flags, and the wiring from those flags to the packages that do the
// work. Run is all the program's main calls.
//
// Each verb parses its command line with commandLine: -h prints
// "usage: idemgate NAME ..." and exits 0, a bad command line one line and
// 2, a runtime failure 1. A verb holds flags and wiring only: what a verb
// does lives in its package (node, bench, backup, reconcile, certs).
package cmd
