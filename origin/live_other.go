//go:build !linux

package origin

// liveWaitable: fasthttp's server (other systems) cannot park a request:
// a blocking reload is answered at once with the playlist as it is.
const liveWaitable = false
