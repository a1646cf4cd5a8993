# Runs in an environment built from examples/environment-docker/Dockerfile.
print(open("/usr/share/example/greeting.txt").read().strip())
