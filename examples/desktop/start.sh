#!/bin/sh
# The desktop: a virtual screen on DISPLAY (:1), a window manager, a VNC server on that screen for this
# sandbox's loopback alone, and noVNC on port 6080, which sandcell serves at the port's URL
# (http://6080-ID.localhost:8080/vnc.html). Apps started with DISPLAY=:1 show there; the command given
# as arguments, if any, starts once the screen is up. Runs until killed.
set -e
display="${DISPLAY:-:1}"
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp &
socket="/tmp/.X11-unix/X${display#:}"
for attempt in $(seq 100); do [ -e "$socket" ] && break; sleep 0.1; done
openbox &
x11vnc -display "$display" -forever -shared -nopw -localhost -noshm -rfbport 5900 -quiet &
# noVNC listens only once the VNC server does (5900 is 170C in /proc/net/tcp, 0A is LISTEN), so a
# browser that reaches the page is never connected to nothing.
for attempt in $(seq 100); do
  grep -qs ':170C [0-9A-F:]* 0A ' /proc/net/tcp /proc/net/tcp6 && break
  sleep 0.1
done
if [ "$#" -gt 0 ]; then "$@" & fi
exec websockify --web /usr/share/novnc 6080 localhost:5900
