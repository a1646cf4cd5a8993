/**
 * The data-analysis Python packages of the runtime (src/image/debian-packages.json)
 * work inside a real sandbox: each is imported and does one small thing a
 * user would do with it, through files in /mnt/data.
 */
import { expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import type { SandboxBackend } from '../src/backends/spec.js';
import { withSession } from './contract/contract-support.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const PROBE = `import json
results = {}
import openpyxl
book = openpyxl.Workbook(); book.active["A1"] = 42; book.save("book.xlsx")
results["openpyxl"] = openpyxl.load_workbook("book.xlsx").active["A1"].value
import xlsxwriter
written = xlsxwriter.Workbook("written.xlsx"); written.add_worksheet().write("A1", "hi"); written.close()
results["xlsxwriter"] = openpyxl.load_workbook("written.xlsx").active["A1"].value
import xlrd
results["xlrd"] = xlrd.open_workbook("book.xlsx").sheet_by_index(0).cell_value(0, 0)
import pandas, tabulate
results["tabulate"] = pandas.DataFrame({"a": [1]}).to_markdown().splitlines()[0]
import plotly.graph_objects as go
results["plotly"] = go.Figure(go.Bar(y=[1, 2])).to_dict()["data"][0]["type"]
import networkx
results["networkx"] = networkx.shortest_path(networkx.path_graph(4), 0, 3)
import sympy
x = sympy.symbols("x"); results["sympy"] = str(sympy.integrate(2 * x, x))
import docx
document = docx.Document(); document.add_paragraph("hello docx"); document.save("a.docx")
results["docx"] = docx.Document("a.docx").paragraphs[0].text
from reportlab.pdfgen import canvas
pdf = canvas.Canvas("a.pdf"); pdf.drawString(100, 750, "hello pdf"); pdf.save()
import pypdf
results["reportlab and pypdf"] = pypdf.PdfReader("a.pdf").pages[0].extract_text().strip()
from PIL import Image
Image.new("RGB", (3, 2), "red").save("a.png"); results["pil"] = list(Image.open("a.png").size)
from bs4 import BeautifulSoup
results["bs4"] = BeautifulSoup("<p class='x'>soup</p>", "html.parser").find("p", class_="x").text
print(json.dumps(results))`;

const EXPECTED = {
  openpyxl: 42,
  xlsxwriter: 'hi',
  xlrd: 42,
  tabulate: '|    |   a |',
  plotly: 'bar',
  networkx: [0, 1, 2, 3],
  sympy: 'x**2',
  docx: 'hello docx',
  'reportlab and pypdf': 'hello pdf',
  pil: [3, 2],
  bs4: 'soup',
};

const backends: { name: string; backendName: string; backend: SandboxBackend }[] = [
  { name: 'bubblewrap', backendName: 'bubblewrap', backend: createBubblewrapBackend() },
  {
    name: 'bubblewrap --rootfs runtime',
    backendName: 'bubblewrap-rootfs',
    backend: createBubblewrapBackend({ rootfs: 'runtime' }),
  },
  { name: 'docker', backendName: 'docker', backend: createDockerBackend() },
];

for (const { name, backendName, backend } of backends) {
  const reason = await unavailableReason(backend);
  describeWhenAvailable(`data packages on ${name}`, backendName, reason, () => {
    it('imports each data package and uses it on files in /mnt/data', async () => {
      await withSession(backend, { timeoutMs: 120_000 }, async (session) => {
        const execution = await session.run(PROBE);
        expect(execution.error).toBeUndefined();
        expect(JSON.parse(execution.stdout)).toEqual(EXPECTED);
      });
    }, 180_000);
  });
}
