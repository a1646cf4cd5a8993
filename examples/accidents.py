# Which factors move with accident counts? Run with:
#   npx sandcell run examples/accidents.py --upload examples/traffic_accidents.csv
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("/mnt/data/traffic_accidents.csv")
print(f"{len(df)} rows, {df.shape[1]} columns")

correlation = df.corr(numeric_only=True)["accidents"].drop("accidents").sort_values()
print("Correlation with accidents:")
print(correlation.round(3).to_string())

ax = correlation.plot.barh(figsize=(6, 4), color="tab:blue", title="Correlation with accidents")
ax.axvline(0, color="black", linewidth=0.8)
plt.tight_layout()
plt.savefig("accident_factors.png", dpi=100)
plt.show()
