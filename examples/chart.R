# An R chart: ggplot2 draws it, sandcell saves it (sandcell-output/figure-1.png), ggsave writes a file too.
library(ggplot2)
sales <- data.frame(month = factor(month.abb[1:6], levels = month.abb[1:6]), units = c(12, 19, 7, 24, 31, 18))
cat("best month:", as.character(sales$month[which.max(sales$units)]), "\n")
chart <- ggplot(sales, aes(month, units)) + geom_col(fill = "steelblue") + labs(title = "Units sold")
ggsave("units.png", chart, width = 5, height = 3, dpi = 100)
print(chart)
