// Package shell is tqmon's interactive session (tqmon shell): TQuel
// statements and backslash meta commands typed at a prompt — or read from
// a pipe, without prompts — run over any subject (package subject) as they
// are ended (";" or a blank line). Range declarations and derived
// relations last for the session; results print whole over a recording
// and as produced from a live subject, until Ctrl-C. Meta commands list
// and describe relations (\d), explain plans (\explain), report sensors,
// change the output, record named results (\record), switch to the
// animated display (\view), and read files (\i); Tab completes keywords,
// relations, range variables and attributes.
//
// Run takes the subject and how errors are rendered, so a session runs
// without the command line around it.
package shell
