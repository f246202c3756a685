//go:build race

package termtext

const raceEnabled = true
