/* Board support for the MCU build. */
#ifndef ROBOTSIM_BOARD_H
#define ROBOTSIM_BOARD_H

void board_init(void);

#endif
