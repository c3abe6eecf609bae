package main

//go:generate go run ../../../cmd/tqmon sensors compile jobs.sdl --go-out jobsensors --go-package jobsensors
