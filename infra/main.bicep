// cluster-failover on Azure: one resource group holding everything (see app.bicep).
// `azd up` deploys it with main.parameters.json; or:
//   az deployment sub create -l <region> -f infra/main.bicep -p infra/main.parameters.json
// Plain resources only (no registry modules), so the templates can be checked offline.
targetScope = 'subscription'

@minLength(1)
@maxLength(40)
@description('Name of the environment; prefixes the resource group and tags every resource (azd sets it).')
param environmentName string

@minLength(1)
@description('Region of every resource.')
param location string

@description('Resource group name; default rg-<environmentName>.')
param resourceGroupName string = ''

@allowed(['20', '22'])
@description('Node.js version of the function app (the code runs on both; the tests run on 20).')
param nodeVersion string = '22'

@allowed(['true', 'false'])
@description('The Failover gate (FAILOVER_ENABLED). Off by default: nothing is evicted until you turn it on.')
param failoverEnabled string = 'false'

@description('Evictions per second while the fleet is healthy (RESOURCE_EVICTION_RATE).')
param resourceEvictionRate string = '0.5'

@description('Faulty/total above which the fleet is unhealthy (UNHEALTHY_CLUSTER_THRESHOLD); also the alert threshold.')
param unhealthyClusterThreshold string = '0.55'

@secure()
@minLength(16)
@description('Bearer token of the admin API (ADMIN_TOKEN), stored in Key Vault.')
param adminToken string

@secure()
@minLength(16)
@description('Root secret of the per-cluster report keys (REPORTER_SIGNING_KEY), stored in Key Vault.')
param reporterSigningKey string

@secure()
@minLength(16)
@description('Bearer token Alertmanager sends (ALERTMANAGER_TOKEN), stored in Key Vault.')
param alertmanagerToken string

@secure()
@minLength(16)
@description('?token= of the Azure Monitor webhook (AZURE_MONITOR_TOKEN), stored in Key Vault.')
param azureMonitorToken string

@secure()
@description('Karmada mode: the kubeconfig (YAML) of the Karmada API server (KARMADA_KUBECONFIG), stored in Key Vault; empty for standalone.')
param karmadaKubeconfig string = ''

@secure()
@description('Standalone member probes: a kubeconfig with one context per member cluster (MEMBER_KUBECONFIGS), stored in Key Vault; empty for none.')
param memberKubeconfigs string = ''

@description('E-mail address for the failover alerts; empty for none (the alert rules still fire in the portal).')
param alertEmail string = ''

@minValue(40)
@maxValue(1000)
@description('Flex Consumption scale-out limit.')
param maximumInstanceCount int = 40

@allowed([512, 2048, 4096])
param instanceMemoryMB int = 2048

var tags = { 'azd-env-name': environmentName }

resource group 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: empty(resourceGroupName) ? 'rg-${environmentName}' : resourceGroupName
  location: location
  tags: tags
}

module app 'app.bicep' = {
  name: 'cluster-failover-app'
  scope: group
  params: {
    location: location
    tags: tags
    nodeVersion: nodeVersion
    failoverEnabled: failoverEnabled
    resourceEvictionRate: resourceEvictionRate
    unhealthyClusterThreshold: unhealthyClusterThreshold
    adminToken: adminToken
    reporterSigningKey: reporterSigningKey
    alertmanagerToken: alertmanagerToken
    azureMonitorToken: azureMonitorToken
    karmadaKubeconfig: karmadaKubeconfig
    memberKubeconfigs: memberKubeconfigs
    alertEmail: alertEmail
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
  }
}

output AZURE_RESOURCE_GROUP string = group.name
output AZURE_FUNCTION_APP_NAME string = app.outputs.functionAppName
output API_URL string = app.outputs.apiUrl
output APPLICATION_INSIGHTS_NAME string = app.outputs.applicationInsightsName
output KEY_VAULT_NAME string = app.outputs.keyVaultName
