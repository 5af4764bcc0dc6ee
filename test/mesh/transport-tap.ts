/**
 * The passive tap of the transport tests: the channel tests' byte tap (test/hostile/channel-tap.ts), which forwards
 * bytes both ways and keeps every byte it saw; one proxy for both instead of two copies.
 */
export { type ChannelTap as Tap, channelTap as tap } from "../hostile/channel-tap.js";
