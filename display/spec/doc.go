// Package spec owns checked display specs: Check resolves a parsed spec
// (grammar/display) against the relations a run can display — the
// catalog's primitive relations and the named results of the user's
// queries — into a Spec, plain data with every attribute resolved to its
// index and every relationship to the icons it is drawn between, or into
// positioned diagnostics ("file:line:col: message", as many as found).
//
// What it decides: an icon is identified by its relation's first entity
// attribute (or first attribute); labels and order default to that key; a
// relationship attribute of entity type E is drawn at the icon that shows
// E entities; only boxes contain, one level deep; shades map values to
// percentages (or spread enum members from 100% to 10%), colours map values
// to named colours (or cycle).
package spec
