# A self-contained tour: state, a table and a chart, all inside the sandbox.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

rng = np.random.default_rng(7)
days = pd.date_range("2026-01-01", periods=30, freq="D")
sales = pd.DataFrame({"day": days, "visitors": rng.poisson(120, size=30)})
sales["orders"] = (sales["visitors"] * rng.uniform(0.05, 0.12, size=30)).round().astype(int)
sales["conversion"] = (sales["orders"] / sales["visitors"]).round(3)

print("Busiest days:")
print(sales.nlargest(3, "visitors").to_string(index=False))

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(sales["day"], sales["visitors"], label="visitors")
ax.bar(sales["day"], sales["orders"], label="orders", color="tab:orange")
ax.set_title("Visitors and orders per day")
ax.legend()
fig.autofmt_xdate()
fig.savefig("daily.png", dpi=100, bbox_inches="tight")
sales.to_csv("daily.csv", index=False)

sales.describe().round(2)
