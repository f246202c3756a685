//go:build !race

package termtext

const raceEnabled = false
