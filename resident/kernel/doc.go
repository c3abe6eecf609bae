// Package kernel is the kernel resident.
package kernel
