/* The board-to-board bus of a robot (CAN-like: frames of an 11-bit id and up to 8 data bytes, every board
 * hears every frame but its own). The frames the boards of robotsim exchange, little-endian fields. */
#ifndef ROBOTSIM_BUS_H
#define ROBOTSIM_BUS_H

#include <stdint.h>

#define BUS_MAX_DATA 8u

#define BUS_ID_BASE_HEARTBEAT 0x101u /* base controller -> all: u32 loop count, u16 fault flags */
#define BUS_ID_POWER_STATUS 0x201u   /* power board -> all: u16 battery mV, u8 flags (POWER_FLAG_*) */

#define POWER_FLAG_RELAY_CLOSED 1u   /* the motors' supply is on */
#define POWER_FLAG_UNDERVOLTAGE 2u   /* the battery is below its cut-off: the relay is open */
#define POWER_FLAG_BASE_SILENT 4u    /* no base heartbeat for BUS_PEER_TIMEOUT_MS: the relay is open */

#define BUS_HEARTBEAT_MS 10u         /* every board sends its frame this often */
#define BUS_PEER_TIMEOUT_MS 100u     /* a peer unheard this long is silent */

/* The fleet radio: the same kind of frames between the base controllers of a fleet's robots (a broadcast radio,
 * ESP-NOW or 802.15.4 class), each robot a node. */
#define RADIO_ID_HEARTBEAT 0x301u    /* base controller -> fleet: u8 node, u32 loop count, u16 fault flags */
#define RADIO_HEARTBEAT_MS 100u
#define RADIO_PEER_TIMEOUT_MS 500u   /* a robot unheard this long is silent */
#define RADIO_MAX_PEERS 16u          /* nodes 0..15 */

#endif
